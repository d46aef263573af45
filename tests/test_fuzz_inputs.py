"""Every file input of every command is fuzz-proof (property-based, hypothesis).

Random byte strings and malformed-but-plausible CSV files (ragged rows, huge
fields, unterminated quotes, nested fractions, nan, -0.0, -1e-300, 1e400, empty
files, binary, a BOM, wrong shapes) are fed to the real console entry point
``designer.cli.main`` (in-process: ``sys.argv`` set, ``SystemExit`` caught; each command's Click
group built once for the module, see :func:`one_group_per_command`), one input slot at a time, the
other inputs valid. The contract:

* a file holding a *poison* (a cell no reader may accept) exits 2;
* any exit 2 prints exactly one line, on stderr, starting ``error: ``, and leaves
  no output file;
* nothing ever raises out of ``main`` (a traceback), nor warns (a warning would
  be a second stderr line), whatever the exit code.

Key files (`--public-key`, `--sign`) are generated too and judged against an oracle written from
RFC 8032 in the test (canonical, on the curve, not of small order; a private key's public half).

Examples are derandomised (fixed, reproducible in CI) and few per slot so the
whole module runs in well under a minute.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from designer import cli

GOOD = {
    "E": "0,1,1\n1,0,1\n1,1,0\n",
    "Q": "0.5,0.25,0.25\n0.25,0.5,0.25\n0.25,0.25,0.5\n",
    "records": "s,u\na,x\na,y\nb,x\nb,y\na,x\nb,y\n",
    "Q4": "0.4,0.2,0.2,0.2\n0.2,0.4,0.2,0.2\n0.2,0.2,0.4,0.2\n0.2,0.2,0.2,0.4\n",
    "reports": "0,0\n1,1\n2,2\n0,1\n",
    "counted": "y\n0\n1\n2\n0\n",
}

#: (name, arguments with FILE for the fuzzed input, the output the command would write, numeric?)
SLOTS = [
    ("certify E", ["certify", "--E", "FILE", "--channel", "{Q}"], None, True),
    ("certify channel", ["certify", "--E", "{E}", "--channel", "FILE"], None, True),
    ("certify --exact E", ["certify", "--exact", "--E", "FILE", "--channel", "{Q}"], None, True),
    ("certify --exact channel", ["certify", "--exact", "--E", "{E}", "--channel", "FILE"], None, True),
    ("spec graph", ["spec", "metric", "--graph", "FILE", "--out", "OUT"], "OUT", False),
    ("spec distance", ["spec", "metric", "--distance", "FILE", "--out", "OUT"], "OUT", True),
    ("design E", ["design", "--E", "FILE", "--out", "OUT"], "OUT", True),
    ("design prior", ["design", "--E", "{E}", "--prior", "FILE", "--out", "OUT"], "OUT", True),
    ("design alternative", ["design", "--E", "{E}", "--utility", "kl", "--alternative", "FILE", "--out", "OUT"], "OUT", True),
    ("design loss", ["design", "--E", "{E}", "--utility", "expected-loss", "--loss", "FILE", "--out", "OUT"], "OUT", True),
    ("robust data", ["robust", "--data", "FILE", "--secret", "s", "--public", "u", "--eps", "1", "--protocol", "grr", "--out", "OUT"], "OUT", False),
    ("certify-robust data", ["certify-robust", "--data", "FILE", "--secret", "s", "--public", "u", "--eps", "1", "--channel", "{Q4}"], None, False),
    ("certify-robust channel", ["certify-robust", "--data", "{records}", "--secret", "s", "--public", "u", "--eps", "1", "--channel", "FILE"], None, True),
    ("simulate distribution", ["simulate", "--mechanism", "grr", "--k", "3", "--eps", "1", "--n", "50", "--seed", "0", "--dist", "FILE"], None, True),
    ("simulate block sizes", ["simulate", "--mechanism", "block-hr", "--k", "3", "--eps", "1", "--n", "50", "--seed", "0", "--blocks", "FILE"], None, True),
    ("strategy E", ["strategy", "--workload", "identity", "--strategy", "identity", "--E", "FILE", "--out", "OUT"], "OUT", True),
    ("strategy workload", ["strategy", "--workload", "FILE", "--strategy", "identity", "--E", "{E}", "--out", "OUT"], "OUT", True),
    ("strategy strategy", ["strategy", "--workload", "identity", "--strategy", "FILE", "--E", "{E}", "--out", "OUT"], "OUT", True),
    ("package channel", ["package", "--E", "{E}", "--channel", "FILE", "--out", "OUT"], "OUT", True),
    ("package prior", ["package", "--E", "{E}", "--channel", "{Q}", "--prior", "FILE", "--out", "OUT"], "OUT", True),
    ("verify-package", ["verify-package", "FILE"], None, False),
    ("verify-package policy", ["verify-package", "{package}", "--E", "FILE"], None, True),
    ("verify-package public key", ["verify-package", "{package}", "--public-key", "FILE"], None, False),
    ("sample-package", ["sample-package", "FILE", "--input", "0", "--n", "5"], None, False),
    ("sample-package policy", ["sample-package", "{package}", "--input", "0", "--n", "5", "--E", "FILE"], None, True),
    ("package sign", ["package", "--E", "{E}", "--channel", "{Q}", "--out", "OUT", "--sign", "FILE"], "OUT", False),
    ("audit E", ["audit", "--E", "FILE", "--reports", "{reports}", "--seed", "0"], None, True),
    ("audit declared", ["audit", "--E", "{E}", "--reports", "{reports}", "--declared", "FILE", "--seed", "0"], None, True),
    ("audit reports", ["audit", "--E", "{E}", "--reports", "FILE", "--seed", "0"], None, False),
    ("estimate mechanism", ["estimate", "--mechanism", "FILE", "--reports", "{counted}"], None, False),
    ("estimate reports", ["estimate", "--mechanism", "{package}", "--reports", "FILE"], None, False),
    ("estimate counts", ["estimate", "--mechanism", "{package}", "--counts", "FILE"], None, False),
    ("shuffle channel", ["shuffle", "--channel", "FILE", "--n", "100", "--delta", "1e-6"], None, True),
    ("shuffle package", ["shuffle", "--package", "FILE", "--n", "100", "--delta", "1e-6"], None, False),
    ("design classes", ["design", "--classes", "FILE", "--out", "OUT"], "OUT", False),
    ("sweep plan", ["sweep", "FILE", "--out", "OUT"], "OUT", False),
]

#: Cells no numeric reader accepts, in any mode (each makes a file bad input).
NUMERIC_POISONS = ["1/2/4", "nan", "abc", "1/0", "0x10", "1_0", "--1", "1e99999999", "log(2", "0.5.5"]
#: Damage no reader accepts, whatever the file holds (CSV structure, encoding).
STRUCTURAL_POISONS = ["unterminated quote", "huge field", "binary", "not utf-8", "empty"]
#: Plausible cells that may or may not be valid where they land.
FILLERS = ["0.5", "0.25", "0", "-0.0", "-1e-300", "1e400", "1e-400", "1.2e-323", "inf", "1", "2", "1/3", "log(2)", " 0.5 ", ""]


@pytest.fixture(scope="module", autouse=True)
def one_group_per_command():
    """Each command's Click group built once for the module and reused by every run of ``main``.

    A program builds its command once; a run in this process would build it again, and Typer its
    Pydantic adapters, one per option (6 of this module's 15 CPU seconds over its 1,200 runs). ``main``
    still runs in full; it is given the app and group it built for the same command before. Building
    them warns or fails in the first run of each command (a warning there fails that run's check)."""
    build_app, get_group = cli.build_app, cli.get_group
    apps = functools.cache(lambda modules: build_app(list(modules)))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli, "build_app", lambda modules=cli.COMMAND_MODULES: apps(tuple(modules)))
        patch.setattr(cli, "get_group", functools.cache(get_group))
        yield


def _run(arguments: list[str]) -> tuple[int, str, str, list]:
    """Run ``ldp-designer arguments`` through the console entry point; (exit code, stdout, stderr, warnings)."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    sys.argv = ["ldp-designer", *arguments]
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            warnings.simplefilter("always")
            try:
                cli.main()
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            else:
                code = 0
    finally:
        sys.argv = saved
    return code, out.getvalue(), err.getvalue(), list(caught)


@pytest.fixture(scope="module")
def good_files(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("good")
    paths = {}
    for name, text in GOOD.items():
        path = folder / f"{name}.csv"
        path.write_text(text)
        paths[name] = str(path)
    paths["package"] = str(folder / "package.json")
    code, _, stderr, _ = _run(["package", "--E", paths["E"], "--channel", paths["Q"], "--out", paths["package"]])
    assert code == 0, stderr
    return paths


def _damage(rows: list[list[str]], poison: str) -> bytes:
    """CSV bytes of ``rows`` with one structural poison applied."""
    text = "\n".join(",".join(row) for row in rows) + "\n"
    if poison == "unterminated quote":
        return ('"' + text).encode()
    if poison == "huge field":
        return (text + "0." + "1" * 140_000 + "\n").encode()
    if poison == "binary":
        return text.encode() + b"\x00\x01\x02"
    if poison == "not utf-8":
        return b"\xff\xfe" + text.encode()
    return b""


@st.composite
def plausible_rows(draw) -> list[list[str]]:
    """Rows of filler cells: a random shape (1-4 x 1-4, sometimes ragged)."""
    n_rows = draw(st.integers(1, 4))
    ragged = draw(st.booleans())
    width = draw(st.integers(1, 4))
    return [
        [draw(st.sampled_from(FILLERS)) for _ in range(draw(st.integers(1, 4)) if ragged else width)]
        for _ in range(n_rows)
    ]


@st.composite
def malformed_files(draw, numeric: bool) -> bytes:
    """A plausible CSV (random shape, fillers, optional BOM/CRLF/comments) holding one poison."""
    rows = draw(plausible_rows())
    n_rows = len(rows)
    poisons = (NUMERIC_POISONS + STRUCTURAL_POISONS) if numeric else STRUCTURAL_POISONS
    poison = draw(st.sampled_from(poisons))
    if poison in NUMERIC_POISONS:
        row = draw(st.integers(0, n_rows - 1))
        rows[row][draw(st.integers(0, len(rows[row]) - 1))] = poison
        data = ("\n".join(",".join(row) for row in rows) + "\n").encode()
    else:
        data = _damage(rows, poison)
    if draw(st.booleans()) and poison not in ("not utf-8", "empty"):
        data = b"\xef\xbb\xbf# a comment\r\n" + data.replace(b"\n", b"\r\n")
    return data


def _check_contract(slot, data: bytes, tmp_path: Path, good: dict[str, str], must_fail: bool) -> None:
    _, template, output, _ = slot
    target = tmp_path / "input.csv"
    target.write_bytes(data)
    out = tmp_path / "out.csv"
    out.unlink(missing_ok=True)
    arguments = [
        str(target) if part == "FILE" else str(out) if part == "OUT" else part.format(**good) for part in template
    ]
    code, stdout, stderr, caught = _run(arguments)
    assert not caught, f"{slot[0]}: warnings {[str(w.message) for w in caught]}"
    assert "Traceback" not in stderr + stdout
    if must_fail:
        assert code == 2, f"{slot[0]}: exit {code} for {data[:80]!r}: {stderr or stdout}"
    if code == 2:
        lines = stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), f"{slot[0]}: stderr {stderr!r}"
        assert not out.exists(), f"{slot[0]}: an output file was written on bad input"


@pytest.mark.parametrize("slot", SLOTS, ids=[slot[0] for slot in SLOTS])
@settings(max_examples=12, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_malformed_files_are_one_line_exit_2(slot, data, tmp_path, good_files):
    _check_contract(slot, data.draw(malformed_files(slot[3])), tmp_path, good_files, must_fail=True)


@pytest.mark.parametrize("slot", SLOTS, ids=[slot[0] for slot in SLOTS])
@settings(max_examples=6, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300))
def test_random_bytes_never_crash(slot, data, tmp_path, good_files):
    _check_contract(slot, data, tmp_path, good_files, must_fail=False)


@pytest.mark.parametrize("slot", SLOTS, ids=[slot[0] for slot in SLOTS])
@settings(max_examples=8, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=plausible_rows())
def test_plausible_files_are_decided_or_refused_in_one_line(slot, rows, tmp_path, good_files):
    """Fillers only (-0.0, -1e-300, 1e400, 1e-400, subnormals, inf, wrong shapes): valid or one clean line."""
    data = ("\n".join(",".join(row) for row in rows) + "\n").encode()
    _check_contract(slot, data, tmp_path, good_files, must_fail=False)


@pytest.mark.parametrize("slot", SLOTS, ids=[slot[0] for slot in SLOTS])
@pytest.mark.parametrize("poison", STRUCTURAL_POISONS)
def test_every_structural_poison_in_every_slot(slot, poison, tmp_path, good_files):
    """The issue's findings, in every command: huge field, unterminated quote, binary, bad encoding, empty."""
    _check_contract(slot, _damage([["0.5", "0.5"], ["0.5", "0.5"]], poison), tmp_path, good_files, must_fail=True)


# ----------------------------------------------------------------- key files (issue 30)
def _public_key_oracle(text: str) -> bool:
    """Whether ``text`` is a usable public key file, decided here from RFC 8032: one line of padded
    standard base64 (ASCII white space around it only) of 32 bytes encoding a curve point
    canonically (y < p), not one of the eight points of small order."""
    import base64
    import binascii

    from test_deploy_keys import SMALL_ORDER, P, decode

    try:
        raw = base64.b64decode(text.strip(" \t\r\n"), validate=True)
    except (ValueError, binascii.Error):
        return False
    if len(raw) != 32:
        return False
    value = int.from_bytes(raw, "little")
    y, sign = value & ((1 << 255) - 1), value >> 255
    return y < P and raw not in SMALL_ORDER and decode(y, sign) is not None


@st.composite
def public_key_texts(draw) -> str:
    """Key file text: random, small-order, non-canonical or genuine 32 bytes (or a 64-byte private key),
    written padded or not, with white space around or inside."""
    import base64

    from test_deploy_keys import SMALL_ORDER, P

    kind = draw(st.sampled_from(["random", "small order", "y >= p", "genuine", "private"]))
    if kind == "random":
        raw = draw(st.binary(min_size=32, max_size=32))
    elif kind == "small order":
        raw = draw(st.sampled_from(SMALL_ORDER))
    elif kind == "y >= p":
        raw = (draw(st.integers(P, 2**255 - 1)) | draw(st.sampled_from([0, 1 << 255]))).to_bytes(32, "little")
    else:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        seed = draw(st.binary(min_size=32, max_size=32))
        raw = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        raw = seed + raw if kind == "private" else raw
    text = base64.b64encode(raw).decode("ascii")
    form = draw(st.sampled_from(["plain", "line end", "unpadded", "space inside", "tab around", "no-break space"]))
    return {"plain": text, "line end": text + "\n", "unpadded": text.rstrip("="), "space inside": text[:8] + " " + text[8:],
            "tab around": f"\t{text} \r\n", "no-break space": text + "\u00a0"}[form]


@settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=public_key_texts())
def test_public_key_files_are_checked_as_keys(text, tmp_path, good_files):
    """A usable key gets as far as the signature (the package is unsigned: rejected, exit 1); every
    other key file is bad input (exit 2), one line naming the file, whatever the package."""
    key = tmp_path / "trusted.pub"
    key.write_text(text, encoding="utf-8")
    code, stdout, stderr, caught = _run(["verify-package", good_files["package"], "--public-key", str(key)])
    assert not caught and "Traceback" not in stdout + stderr
    lines = stderr.splitlines()
    if _public_key_oracle(text):
        assert code == 1 and lines == [line for line in lines if line.startswith("rejected: ")] and "not signed" in stderr
    else:
        assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {key}"), (text, stderr)


@settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=public_key_texts(), splice=st.booleans())
def test_private_key_files_are_checked_as_keys(text, splice, tmp_path, good_files):
    """``--sign`` takes a 64-byte private key whose public half is its seed's (computed here with
    ``cryptography``); a public key, a spliced key or anything else is refused, no package written."""
    import base64
    import binascii

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        raw = base64.b64decode(text.strip(" \t\r\n"), validate=True)
    except (ValueError, binascii.Error):
        raw = b""
    if splice and len(raw) == 64:
        raw = raw[:32] + bytes(reversed(raw[32:]))
        text = base64.b64encode(raw).decode("ascii")
    usable = len(raw) == 64 and Ed25519PrivateKey.from_private_bytes(raw[:32]).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw) == raw[32:]
    key, out = tmp_path / "author", tmp_path / "signed.json"
    key.write_text(text, encoding="utf-8")
    key.chmod(0o600)
    out.unlink(missing_ok=True)
    code, stdout, stderr, caught = _run(["package", "--E", good_files["E"], "--channel", good_files["Q"],
                                         "--out", str(out), "--sign", str(key)])
    assert not caught and "Traceback" not in stdout + stderr
    if usable:
        assert code == 0 and out.exists() and stderr == "", stderr
    else:
        assert code == 2 and not out.exists() and stderr.startswith(f"error: {key}") and stderr.count("\n") == 1, stderr

#: Changes to a counts file of ``estimate --save-counts`` (issue 30): (name, structural?). A structural
#: change is refused even when the forger recomputes the digest; any change is refused when the digest
#: is left as written.
COUNTS_CHANGES = [("count", False), ("scale", False), ("negative", True), ("duplicate", True), ("drop row", False),
                  ("drop file", False), ("sha256", False), ("column", False), ("format", True), ("not json", True),
                  ("null count", True), ("float counts", True)]


@pytest.fixture(scope="module")
def saved_counts(tmp_path_factory, good_files) -> bytes:
    """The bytes of a counts file (2 days of reports, grouped by day)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path_factory.mktemp("counts")
    for day, reports in (("01", [0, 1, 2, 0, 1]), ("02", [2, 2, 1, 0])):
        (folder / "r" / f"day={day}").mkdir(parents=True)
        pq.write_table(pa.table({"y": reports}), folder / "r" / f"day={day}" / "part.parquet")
    code, _, stderr, _ = _run(["estimate", "--mechanism", good_files["package"], "--reports", str(folder / "r"),
                               "--by", "day", "--save-counts", str(folder / "c.parquet")])
    assert code == 0, stderr
    return (folder / "c.parquet").read_bytes()


def _changed_counts(original: bytes, change: str, row: int, amount: int, recompute: bool) -> bytes:
    """``original`` with one change applied (the digest recomputed or not)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from designer.aggregate.counts_file import METADATA_KEY, counts_digest

    table = pq.read_table(pa.BufferReader(original))
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    counts = table["count"].to_pylist()
    row %= len(counts)
    kind = pa.int64()
    if change == "count":
        counts[row] += amount
    elif change == "scale":
        counts = [value * (amount + 1) for value in counts]
    elif change == "negative":
        counts[row] = -amount
    elif change == "null count":
        counts[row] = None
    elif change == "float counts":
        counts, kind = [value + 0.5 for value in counts], pa.float64()
    table = table.set_column(table.column_names.index("count"), "count", pa.array(counts, type=kind))
    if change == "duplicate":
        table = pa.concat_tables([table, table.slice(row, 1)])
    elif change == "drop row":
        table = pa.concat_tables([table.slice(0, row), table.slice(row + 1)])
    elif change == "drop file":
        meta["files"].pop(row % len(meta["files"]))
    elif change == "sha256":
        entry = meta["files"][row % len(meta["files"])]
        entry["sha256"] = f"{(int(entry['sha256'], 16) + amount) % 16**64:064x}"
    elif change == "column":
        meta["column"] = "z"
    elif change == "format":
        meta["format"] = amount + 2
    if recompute and change not in ("not json", "float counts", "null count"):
        columns = table.to_pydict()
        keys = list(zip(columns["group_0"]))
        rows: dict = {}
        for key, value, count in zip(keys, columns["value"], columns["count"]):
            rows[(key, value)] = rows.get((key, value), 0) + count
        meta["digest"] = counts_digest(meta, rows)
    text = b"{not json" if change == "not json" else json.dumps(meta).encode()
    sink = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: text}), sink)
    return sink.getvalue().to_pybytes()


@settings(max_examples=20, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(change=st.sampled_from(COUNTS_CHANGES), row=st.integers(0, 50), amount=st.integers(1, 10**6),
       recompute=st.booleans())
def test_changed_counts_files_are_refused_in_one_line(change, row, amount, recompute, tmp_path, good_files,
                                                      saved_counts):
    """``--counts`` after a change: exit 1 (``rejected:``, the digest does not match) or 2 (``error:``,
    malformed), one line naming the file, never a traceback; a structural change is refused even with the
    digest recomputed. (A forger who recomputes the digest of a well-formed change is caught only by
    ``--public-key``: tests/test_aggregate_increments.py.)"""
    name, structural = change
    path = tmp_path / "changed.parquet"
    path.write_bytes(_changed_counts(saved_counts, name, row, amount, recompute))
    code, stdout, stderr, caught = _run(["estimate", "--mechanism", good_files["package"], "--counts", str(path),
                                         "--by", "day"])
    assert not caught and "Traceback" not in stderr + stdout
    if recompute and not structural:
        assert code in (0, 1, 2), stderr
        return
    assert code in (1, 2) and stdout == "", f"{name}: exit {code}"
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rejected: " if code == 1 else "error: ") and str(path) in lines[0]
    if structural:
        assert code == 2, lines[0]
