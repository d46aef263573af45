"""Packages with a longitudinal policy, and the clients that keep it (Python, Node, headless Chromium).

The package is RAPPOR (h = 2 of 4 Bloom bits, f = 1/2, p = 1/2, q = 3/4): its table is the
permanent stage, its ``longitudinal`` member the instantaneous one, both exact over 2^8.
"""

import json
import math
import shutil
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from deploy_fixtures import P_VALUE_FLOOR, chi_square_p_value, run_page_in_chromium
from typer.testing import CliRunner

from designer.cli import app
from designer.deploy.memo import MemoizedClient, MemoStore, RoundsExceeded, StoreMismatch
from designer.deploy.package import build_package, verify_package
from designer.deploy.sampler import PackageTampered, package_digest
from designer.deploy.table import deployable_table
from designer.longitudinal.families import rappor
from designer.longitudinal.policy import (
    PolicyRefused,
    add_longitudinal_member,
    instantaneous_table,
    package_stages,
    verify_longitudinal,
)
from designer.spec import PrivacyMatrix

FILTERS = [[0, 1], [2, 3], [0, 2], [1, 3], [0, 3], [1, 2]]
JS = Path(__file__).resolve().parent.parent / "designer" / "deploy" / "js"
DEPLOY = Path(__file__).resolve().parent.parent / "designer" / "deploy"
runner = CliRunner()


def levels(disjoint: str, overlapping: str) -> PrivacyMatrix:
    return PrivacyMatrix([["0" if x == y else (disjoint if not set(FILTERS[x]) & set(FILTERS[y]) else overlapping)
                           for y in range(6)] for x in range(6)])


def rappor_package(rounds_per_period: int = 3, period_seconds: int = 3600) -> dict:
    stages = rappor(FILTERS, "1/2", "1/2", "3/4", labels=[str(x) for x in range(6)])
    document = build_package(deployable_table(stages.permanent, levels("log(81)", "log(9)"), bits=8))
    add_longitudinal_member(document, levels("log(5929/2025)", "log(77/45)"), rounds_per_period, period_seconds,
                            instantaneous_table(stages.instantaneous, 8))
    return document


@pytest.fixture(scope="module")
def package() -> dict:
    return rappor_package()


def test_the_package_records_and_reproves_the_policy(package, tmp_path):
    verification = verify_package(package)
    assert verification.certified
    summary = verify_longitudinal(package, verification)
    assert summary["long_term_epsilon"] == pytest.approx(4 * math.log(3), abs=1e-12)
    assert summary["report_epsilon"] == pytest.approx(2 * math.log(77 / 45), abs=1e-12)
    stages = package_stages(package)
    assert np.array_equal(stages.report().exact_matrix, rappor(FILTERS, "1/2", "1/2", "3/4").report().exact_matrix)
    # a report level below the real one is refused when recording, and a stored one is not proved
    stages_only = build_package(deployable_table(stages.permanent, levels("log(81)", "log(9)"), bits=8))
    with pytest.raises(PolicyRefused, match="not E1-LDP"):
        add_longitudinal_member(stages_only, levels("log(5928/2025)", "log(77/45)"), 1, 1,
                                instantaneous_table(stages.instantaneous, 8))
    forged = json.loads(json.dumps(package))
    forged["longitudinal"]["report_E"][0][1] = "log(5928/2025)"
    forged["sha256"] = package_digest(forged)
    with pytest.raises(PackageTampered, match="not proved"):
        verify_longitudinal(forged, verify_package(forged))
    # the command line: account gives the paper's levels; verify-package re-proves the member
    path = tmp_path / "rappor.json"
    path.write_text(json.dumps(package))
    result = runner.invoke(app, ["account", "--package", str(path), "--rounds", "30", "--delta", "1e-6", "--memoized",
                                 "--json"])
    payload = json.loads(result.output)
    assert payload["long_term_epsilon"] == pytest.approx(4 * math.log(3), abs=1e-12)
    assert payload["report_epsilon"] == pytest.approx(2 * math.log(77 / 45), abs=1e-12)
    assert payload["basic_epsilon"] == pytest.approx(4 * math.log(3), abs=1e-12)
    verified = runner.invoke(app, ["verify-package", str(path), "--json"])
    assert verified.exit_code == 0 and json.loads(verified.stdout)["longitudinal"]["rounds_per_period"] == 3


def test_old_packages_stay_valid_and_the_schema_accepts_the_member(package):
    import jsonschema

    schema = json.loads((DEPLOY / "mechanism-package.schema.json").read_text())
    jsonschema.validate(package, schema)
    old = {key: value for key, value in package.items() if key != "longitudinal"}
    old["sha256"] = package_digest(old)
    jsonschema.validate(old, schema)
    assert verify_package(old).certified
    broken = json.loads(json.dumps(package))
    broken["longitudinal"]["memoization"] = "optional"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_python_client_memoizes_across_calls_and_restarts(package, tmp_path):
    store_path = str(tmp_path / "memo.sqlite3")
    now = [7200.0]  # periods of an hour: three reports each
    with MemoStore(store_path, package["sha256"]) as store:
        client = MemoizedClient(package, store, clock=lambda: now[0], allow_unauthenticated=True)
        first = [client.permanent(x) for x in range(6)]
        reports = [client.report("0") for _ in range(3)]
        with pytest.raises(RoundsExceeded):
            client.report("5")
        now[0] += 3600
        reports.append(client.report("0"))
    assert set(reports) <= set(client.outputs)
    with MemoStore(store_path, package["sha256"]) as store:  # a restart: the same permanent responses
        again = MemoizedClient(package, store, allow_unauthenticated=True)
        assert [again.permanent(x) for x in range(6)] == first
    other = rappor_package(rounds_per_period=4)
    with pytest.raises(StoreMismatch):
        MemoStore(store_path, other["sha256"])


def test_python_client_draws_the_certified_stages(package):
    """Fresh stores: the permanent response follows the table's row; one store: reports follow Q2's row."""
    permanent = Counter()
    for _ in range(400):
        with MemoStore(":memory:", package["sha256"]) as store:
            permanent[MemoizedClient(package, store, allow_unauthenticated=True).permanent(2)] += 1
    row = package["table"][2]
    assert chi_square_p_value([permanent[y] for y in range(16)], row, 256) > P_VALUE_FLOOR
    with MemoStore(":memory:", package["sha256"]) as store:
        client = MemoizedClient(package, store, clock=iter(range(0, 10**9, 3600)).__next__, allow_unauthenticated=True)
        response = client.permanent(2)
        reports = Counter(client.sample(2) for _ in range(3000))
    stage = package["longitudinal"]["instantaneous"]["table"][response]
    assert chi_square_p_value([reports[z] for z in range(16)], stage, 256) > P_VALUE_FLOOR


CONCURRENT = """
import json, sys
sys.path.insert(0, {folder!r})
from memo import MemoStore, MemoizedClient, RoundsExceeded
document = json.load(open({package!r}))
made, seen = 0, set()
with MemoStore({store!r}, document["sha256"]) as store:
    client = MemoizedClient(document, store, clock=lambda: 7200.0, allow_unauthenticated=True)
    for _ in range(40):
        try:
            client.report("3")
            made += 1
        except RoundsExceeded:
            pass
        seen.add(client.permanent(3))
print(json.dumps({{"made": made, "seen": sorted(seen)}}))
"""


def test_python_store_is_safe_for_two_processes_and_needs_only_the_standard_library(tmp_path):
    package = rappor_package(rounds_per_period=50)
    shutil.copy(DEPLOY / "sampler.py", tmp_path / "sampler.py")
    shutil.copy(DEPLOY / "memo.py", tmp_path / "memo.py")
    (tmp_path / "mech.json").write_text(json.dumps(package))
    script = CONCURRENT.format(folder=str(tmp_path), package=str(tmp_path / "mech.json"),
                               store=str(tmp_path / "shared.sqlite3"))
    workers = [subprocess.Popen([sys.executable, "-I", "-S", "-c", script], stdout=subprocess.PIPE, text=True)
               for _ in range(2)]
    answers = [json.loads(worker.communicate(timeout=120)[0]) for worker in workers]
    assert sum(answer["made"] for answer in answers) == 50  # the period's rounds, shared exactly
    assert len({tuple(answer["seen"]) for answer in answers}) == 1 and len(answers[0]["seen"]) == 1


NODE_DRIVER = """
import {{ readFileSync }} from "node:fs";
import {{ loadMemoized, NodeFileStorage }} from "./ldp-memo.mjs";
const text = readFileSync(process.argv[2], "utf8");
const out = {{ made: 0, refused: 0 }};
try {{
  const client = await loadMemoized(text, new NodeFileStorage(process.argv[3]), {{ allowUnauthenticated: true, clock: () => 7200000 }});
  for (let i = 0; i < Number(process.argv[4]); i++) {{
    try {{ await client.report("3"); out.made++; }} catch (error) {{ if (error.constructor.name === "RoundsExceeded") out.refused++; else throw error; }}
  }}
  out.permanent = [];
  for (let x = 0; x < 6; x++) out.permanent.push(await client.permanent(x));
}} catch (error) {{ out.error = error.constructor.name + ": " + error.message; }}
console.log(JSON.stringify(out));
"""


def run_node(folder: Path, package: str, store: str, reports: int) -> subprocess.Popen:
    return subprocess.Popen(["node", str(folder / "drive.mjs"), str(folder / package), str(folder / store),
                             str(reports)], stdout=subprocess.PIPE, text=True, cwd=folder)


def test_node_client_memoizes_across_restarts_refuses_another_package_and_shares_a_file(tmp_path):
    for name in ("ldp-client.mjs", "ldp-memo.mjs"):
        shutil.copy(JS / name, tmp_path / name)
    (tmp_path / "drive.mjs").write_text(NODE_DRIVER.format())
    (tmp_path / "mech.json").write_text(json.dumps(rappor_package(rounds_per_period=50)))
    (tmp_path / "other.json").write_text(json.dumps(rappor_package(rounds_per_period=7)))
    first = json.loads(run_node(tmp_path, "mech.json", "store.json", 0).communicate(timeout=60)[0])
    second = json.loads(run_node(tmp_path, "mech.json", "store.json", 0).communicate(timeout=60)[0])
    assert "error" not in first and first["permanent"] == second["permanent"]
    refused = json.loads(run_node(tmp_path, "other.json", "store.json", 0).communicate(timeout=60)[0])
    assert refused["error"].startswith("StoreMismatch")
    workers = [run_node(tmp_path, "mech.json", "shared.json", 40) for _ in range(2)]
    answers = [json.loads(worker.communicate(timeout=120)[0]) for worker in workers]
    assert all("error" not in answer for answer in answers), answers
    assert sum(answer["made"] for answer in answers) == 50
    assert answers[0]["permanent"] == answers[1]["permanent"]


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>ldp-memo test</title></head>
<body><pre id="result">pending</pre>
<script type="module">
import { loadMemoized, IndexedDBStorage, LocalStorageStorage } from "./ldp-memo.mjs";
// --dump-dom's virtual time runs ahead while IndexedDB works on its own thread; a pending fetch holds it
async function settled(promise) {
  let done = false;
  const result = promise.finally(() => { done = true; });
  while (!done) await fetch("index.html", { cache: "no-store" });
  return result;
}
const out = {};
try {
  const text = await (await fetch("mech.json")).text();
  const options = { allowUnauthenticated: true, clock: () => 7200000 };
  for (const [name, storage] of [["indexeddb", new IndexedDBStorage("ldp-memo-test")], ["localstorage", new LocalStorageStorage("ldp-memo-test:")]]) {
    const client = await settled(loadMemoized(text, storage, options));
    out[name] = { permanent: [], reports: [] };
    for (let x = 0; x < 6; x++) out[name].permanent.push(await settled(client.permanent(x)));
    out[name].reports.push(await settled(client.report("0")));
  }
  try { await settled(loadMemoized(await (await fetch("other.json")).text(), new IndexedDBStorage("ldp-memo-test"), options)); out.other = "accepted"; }
  catch (error) { out.other = error.constructor.name; }
} catch (error) { out.error = error.constructor.name + ": " + error.message; }
document.getElementById("result").textContent = JSON.stringify(out);
</script></body></html>
"""


def test_headless_chromium_client_keeps_its_memo_across_page_loads(tmp_path):
    for name in ("ldp-client.mjs", "ldp-memo.mjs"):
        shutil.copy(JS / name, tmp_path / name)
    (tmp_path / "mech.json").write_text(json.dumps(rappor_package(rounds_per_period=50)))
    (tmp_path / "other.json").write_text(json.dumps(rappor_package(rounds_per_period=7)))
    (tmp_path / "index.html").write_text(PAGE)
    with socket.socket() as probe:  # one free port for both runs: the same origin, so the same storage
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    first = run_page_in_chromium(tmp_path, port)
    second = run_page_in_chromium(tmp_path, port)  # the same profile and origin: a browser restart
    assert "error" not in first and "error" not in second, (first, second)
    for name in ("indexeddb", "localstorage"):
        assert first[name]["permanent"] == second[name]["permanent"]
    assert first["other"] == second["other"] == "StoreMismatch"



def draw(matrix: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One output per row index, by inverting the row's cumulative distribution."""
    cumulative = np.cumsum(matrix, axis=1)
    return np.minimum((rng.random(rows.size)[:, None] > cumulative[rows]).sum(axis=1), matrix.shape[1] - 1)


def test_estimate_reads_one_round_of_memoized_reports_through_both_stages(package, tmp_path):
    """Reports drawn here (numpy, not the clients) through Q1 then Q2: the estimate inverts Q1 Q2."""
    stages = package_stages(package)
    rng = np.random.default_rng(5)
    prior = np.array([0.4, 0.3, 0.1, 0.1, 0.05, 0.05])
    values = rng.choice(6, size=40_000, p=prior)
    permanent = draw(stages.permanent.matrix, values, rng)
    reports = draw(stages.instantaneous.matrix, permanent, rng)
    (tmp_path / "round.csv").write_text("y\n" + "\n".join(stages.instantaneous.output_labels[z] for z in reports) + "\n")
    (tmp_path / "mech.json").write_text(json.dumps(package))
    result = runner.invoke(app, ["estimate", "--mechanism", str(tmp_path / "mech.json"), "--reports",
                                 str(tmp_path / "round.csv"), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["mechanism"].startswith("package (two-stage")
    estimate = np.array([row["value"] for row in payload["estimate"]])
    low, high = (np.array([row[key] for row in payload["estimate"]]) for key in ("low", "high"))
    assert np.all((low - 0.02 <= prior) & (prior <= high + 0.02))  # 95% intervals, with a little room for six
    # the same counts through the permanent stage alone would mislead: the instantaneous noise is not undone
    counts = np.bincount(reports, minlength=16) / reports.size
    naive, *_ = np.linalg.lstsq(stages.permanent.matrix.T, counts, rcond=None)
    assert np.abs(naive - prior).max() > 3 * np.abs(estimate - prior).max()


def write_matrix(path: Path, rows) -> Path:
    path.write_text("".join(",".join(str(value) for value in row) + "\n" for row in rows))
    return path


def test_package_command_records_the_policy_or_refuses(tmp_path):
    stages = rappor(FILTERS, "1/2", "1/2", "3/4")
    q1 = write_matrix(tmp_path / "q1.csv", stages.permanent.exact_matrix.tolist())
    q2 = write_matrix(tmp_path / "q2.csv", stages.instantaneous.exact_matrix.tolist())
    e_inf = write_matrix(tmp_path / "einf.csv", levels("log(81)", "log(9)").exact_epsilon.tolist())
    e_1 = write_matrix(tmp_path / "e1.csv", levels("log(5929/2025)", "log(77/45)").exact_epsilon.tolist())
    weak = write_matrix(tmp_path / "weak.csv", levels("log(5928/2025)", "log(77/45)").exact_epsilon.tolist())
    base = ["package", "--E", str(e_inf), "--channel", str(q1), "--bits", "8", "--instantaneous", str(q2),
            "--instantaneous-bits", "8"]
    made = runner.invoke(app, [*base, "--out", str(tmp_path / "p.json"), "--report-E", str(e_1),
                               "--rounds-per-period", "2", "--period-seconds", "60"])
    assert made.exit_code == 0, made.output
    member = json.loads((tmp_path / "p.json").read_text())["longitudinal"]
    assert (member["rounds_per_period"], member["period_seconds"]) == ("2", "60")
    refused = runner.invoke(app, [*base, "--out", str(tmp_path / "no.json"), "--report-E", str(weak)])
    assert refused.exit_code == 1 and "not E1-LDP" in refused.output and not (tmp_path / "no.json").exists()
    alone = runner.invoke(app, [*base, "--out", str(tmp_path / "no.json")])
    assert alone.exit_code == 2 and "--report-E" in alone.output and not (tmp_path / "no.json").exists()
