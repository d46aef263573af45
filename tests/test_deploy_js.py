"""The JavaScript client (designer/deploy/js/ldp-client.mjs) in Node and in headless Chromium.

Both load a package, check its SHA-256 against the canonical form (the same bytes
as Python's, non-ASCII labels included), and draw 10^6 reports per tested input;
the counts must pass a chi-square goodness-of-fit test against the table while a
deliberately wrong table fails it.
"""

import json
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest

from designer.channel import Channel
from designer.deploy.package import build_package
from designer.deploy.sampler import canonical_bytes
from designer.deploy.table import deployable_table
from designer.spec import PrivacyMatrix
from deploy_fixtures import P_VALUE_FLOOR, chi_square_p_value, run_page_in_chromium, wrong_row

CLIENT = Path(__file__).resolve().parent.parent / "designer" / "deploy" / "js" / "ldp-client.mjs"
DRIVER = Path(__file__).resolve().parent / "js" / "sample_counts.mjs"
DRAWS = 1_000_000
#: Labels that exercise the canonical form: non-ASCII, an astral character, DEL, a control character, quotes.
LABELS = ["café", "日本", "😀 emoji", 'quote " and \\', "del\x7f ctl\x01"]


@pytest.fixture(scope="module")
def package() -> dict:
    rows = [[Fraction(3, 5) if x == y else Fraction(1, 10) for y in range(5)] for x in range(5)]
    rows[4] = [Fraction(0), Fraction(1, 4), Fraction(1, 4), Fraction(1, 4), Fraction(1, 4)]
    levels = [["0" if x == y else ("inf" if x == 4 or y == 4 else "log(6)") for y in range(5)] for x in range(5)]
    levels[0][4] = "inf"
    channel = Channel(rows, LABELS, [f"report {label}" for label in LABELS])
    return build_package(deployable_table(channel, PrivacyMatrix(levels, LABELS)))


def run_node(path: Path, x: int, n: int) -> dict:
    result = subprocess.run(["node", str(DRIVER), str(CLIENT), str(path), str(x), str(n)],
                            capture_output=True, text=True, timeout=120, check=True)
    return json.loads(result.stdout)


def check_fit(counts, document, x):
    total = 2 ** document["bits"]
    row = document["table"][x]
    assert sum(counts) == DRAWS
    assert chi_square_p_value(counts, row, total) > P_VALUE_FLOOR
    assert chi_square_p_value(counts, wrong_row(row, total), total) < 1e-9


def test_node_client_hash_and_counts(tmp_path, package):
    path = tmp_path / "mech.json"
    path.write_text(json.dumps(package, ensure_ascii=False, indent=1))
    for x in (0, 4):
        answer = run_node(path, x, DRAWS)
        assert answer["canonical"].encode("ascii") == canonical_bytes(package)
        assert answer["digest"] == package["sha256"]
        check_fit(answer["counts"], package, x)
    assert answer["counts"][0] == 0  # a zero of the table is never drawn


@pytest.mark.parametrize(
    "change, error",
    [
        (lambda d: d["table"][0].__setitem__(1, str(int(d["table"][0][1]) + 1)) or d["table"][0].__setitem__(
            2, str(int(d["table"][0][2]) - 1)), "PackageTampered"),
        (lambda d: d["inputs"].__setitem__(1, "日本 "), "PackageTampered"),
        (lambda d: d.__setitem__("schema_version", 2), "PackageError"),
        (lambda d: d["table"][0].__setitem__(0, str(int(d["table"][0][0]) + 1)), "PackageError"),
    ],
)
def test_node_client_rejects_bad_packages(tmp_path, package, change, error):
    document = json.loads(json.dumps(package))
    change(document)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    assert run_node(path, 0, 0)["error"] == error
    path.write_text(json.dumps(package)[:-40])
    assert run_node(path, 0, 0)["error"] == "PackageError"


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>ldp-client test</title></head>
<body><pre id="result">pending</pre>
<script type="module">
import { loadPackage } from "./ldp-client.mjs";
const out = {};
try {
  const mechanism = await loadPackage(await (await fetch("mech.json")).text(), { allowUnauthenticated: true });
  out.sha256 = mechanism.sha256;
  out.counts = {};
  for (const x of [0, 4]) out.counts[x] = mechanism.counts(x, %(draws)d);
} catch (error) { out.error = error.constructor.name + ": " + error.message; }
try { await loadPackage(await (await fetch("tampered.json")).text(), { allowUnauthenticated: true }); out.tampered = "accepted"; }
catch (error) { out.tampered = error.constructor.name; }
document.getElementById("result").textContent = JSON.stringify(out);
</script></body></html>
"""


def test_headless_chromium_client(tmp_path, package):
    shutil.copy(CLIENT, tmp_path / "ldp-client.mjs")
    (tmp_path / "mech.json").write_text(json.dumps(package, ensure_ascii=False))
    tampered = json.loads(json.dumps(package))
    tampered["outputs"][0] = "report x"
    (tmp_path / "tampered.json").write_text(json.dumps(tampered))
    (tmp_path / "index.html").write_text(PAGE % {"draws": DRAWS})
    out = run_page_in_chromium(tmp_path)
    assert "error" not in out, out
    assert out["sha256"] == package["sha256"] and out["tampered"] == "PackageTampered"
    for x in ("0", "4"):
        check_fit(out["counts"][x], package, int(x))
