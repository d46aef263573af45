"""Shared helpers of the deployment tests: random E-LDP channels and a chi-square goodness of fit."""

from __future__ import annotations

import functools
import html
import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from fractions import Fraction
from pathlib import Path

import numpy as np

from designer.channel import Channel
from designer.spec import PrivacyMatrix

#: A correct sampler fails this p-value threshold with probability 1e-6 per check.
P_VALUE_FLOOR = 1e-6


def random_tight_channel(rng: np.random.Generator, k: int, m: int, blocks: bool, exact_levels: bool):
    """A random rational channel and an asymmetric E that it meets with equality on every finite pair.

    With ``blocks``, inputs and outputs are split in two groups and a row is zero outside
    its group (so cross-group E entries are inf); 20% of the other pairs get inf as well.
    ``exact_levels`` writes ``E[x, x'] = log(max_y Q[x,y] / Q[x',y])`` (exactly tight);
    otherwise the float of that logarithm (tight up to its last bit, either side).
    """
    row_group = rng.integers(0, 2, size=k) if blocks else np.zeros(k, dtype=int)
    column_group = (np.arange(m) % 2) if blocks else np.zeros(m, dtype=int)
    weights = rng.integers(1, 1000, size=(k, m))
    weights = np.where(row_group[:, None] == column_group[None, :], weights, 0)
    rows = [[Fraction(int(v), int(row.sum())) for v in row] for row in weights]
    levels = np.empty((k, k), dtype=object)
    for x in range(k):
        for x_prime in range(k):
            if x == x_prime:
                levels[x, x_prime] = "0"
                continue
            support_break = any(rows[x][y] > 0 and rows[x_prime][y] == 0 for y in range(m))
            if support_break or rng.random() < 0.2:
                levels[x, x_prime] = "inf"
                continue
            ratio = max(max(rows[x][y] / rows[x_prime][y] for y in range(m) if rows[x][y] > 0), Fraction(1))
            levels[x, x_prime] = f"log({ratio})" if exact_levels else repr(float(np.log(float(ratio))))
    return Channel(rows), PrivacyMatrix(levels)


def chi_square_p_value(counts, table_row, total: int) -> float:
    """p-value of Pearson's chi-square test of ``counts`` against ``table_row / total``.

    Outputs with probability zero must have count zero (else p = 0); they are left out.
    """
    from scipy.stats import chisquare

    counts = np.asarray(counts, dtype=float)
    probabilities = np.array([int(value) for value in table_row], dtype=float) / total
    if np.any(counts[probabilities == 0] > 0):
        return 0.0
    support = probabilities > 0
    expected = probabilities[support] * counts.sum()
    if support.sum() == 1:
        return 1.0
    return float(chisquare(counts[support], expected).pvalue)


def wrong_row(table_row, total: int, share: float = 0.02) -> list[int]:
    """The row with ``share`` of the mass moved from its largest entry to the smallest positive one."""
    row = [int(value) for value in table_row]
    largest = max(range(len(row)), key=row.__getitem__)
    smallest = min((y for y in range(len(row)) if row[y] > 0 and y != largest), key=row.__getitem__)
    moved = int(share * total)
    row[largest] -= moved
    row[smallest] += moved
    return row


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serve the test folder without logging every request."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".mjs": "text/javascript"}

    def log_message(self, format, *args):
        pass


def run_page_in_chromium(folder: Path, port: int = 0) -> dict:
    """Serve ``folder`` on 127.0.0.1, load its ``index.html`` in headless Chromium, return the page's JSON.

    The page writes one JSON object into ``<pre id="result">`` (read back from ``--dump-dom``).
    ``port``: 0 picks a free one; the same port in two runs keeps the origin, so the page's storage
    (IndexedDB, localStorage, in ``folder / "profile"``) survives from the first run to the second.
    """
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser is not None, "chromium is not installed: `make test` installs it (make browser-deps)"
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        result = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-dev-shm-usage", f"--user-data-dir={folder / 'profile'}", "--virtual-time-budget=60000",
             "--dump-dom", f"http://127.0.0.1:{server.server_address[1]}/index.html"],
            capture_output=True, text=True, timeout=120,
        )
    finally:
        server.shutdown()
        server.server_close()
    match = re.search(r'<pre id="result">(.*?)</pre>', result.stdout, re.S)
    assert match, result.stdout[-2000:] + result.stderr[-2000:]
    return json.loads(html.unescape(match.group(1)))


#: The standard-library client, as a user copies it next to a package.
STDLIB_SAMPLER = Path(__file__).resolve().parent.parent / "designer" / "deploy" / "sampler.py"


def run_stdlib_client_alone(folder: Path, package: dict, name: str, code: str) -> tuple[list[str], str]:
    """Run ``code`` in an isolated interpreter (``-I -S``) beside a copy of ``sampler.py`` and the package.

    Returns the lines ``code`` printed and, last, the sorted numpy/designer modules it loaded
    (``"[]"`` when the client ran on the standard library alone).
    """
    shutil.copy(STDLIB_SAMPLER, folder / "sampler.py")
    (folder / name).write_text(json.dumps(package))
    script = (
        "import sys; sys.path.insert(0, '.')\n" + code
        + "\nprint(sorted(k for k in sys.modules if k.split('.')[0] in ('numpy', 'designer')))"
    )
    result = subprocess.run([sys.executable, "-I", "-S", "-c", script], cwd=folder, capture_output=True, text=True,
                            check=True)
    *printed, modules = result.stdout.strip().splitlines()
    return printed, modules


#: The JavaScript client and the module that runs package cases through it (Node and Chromium).
JS_CLIENT = Path(__file__).resolve().parent.parent / "designer" / "deploy" / "js" / "ldp-client.mjs"
CASES_MODULE = Path(__file__).resolve().parent / "js" / "trust_cases.mjs"
CASES_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>ldp-client trust test</title></head>
<body><pre id="result">pending</pre>
<script type="module">
import * as client from "./ldp-client.mjs";
import { runCases } from "./trust_cases.mjs";
let out;
try { out = await runCases(client, await (await fetch("cases.json")).json()); }
catch (error) { out = { error: error.constructor.name + ": " + error.message }; }
document.getElementById("result").textContent = JSON.stringify(out);
</script></body></html>
"""


def run_cases_in_node(folder: Path, cases: list[dict]) -> dict:
    """``{case name: "ok: <trust>" or "<ErrorClass>: <message>"}`` of ``loadPackage`` in Node (tests/js/trust_cases.mjs)."""
    path = folder / "cases.json"
    path.write_text(json.dumps(cases))
    result = subprocess.run(["node", str(CASES_MODULE), str(JS_CLIENT), str(path)], capture_output=True, text=True,
                            timeout=120, check=True)
    return json.loads(result.stdout)


def run_cases_in_chromium(folder: Path, cases: list[dict]) -> dict:
    """The same verdicts from headless Chromium (a page served from ``folder``)."""
    shutil.copy(JS_CLIENT, folder / "ldp-client.mjs")
    shutil.copy(CASES_MODULE, folder / "trust_cases.mjs")
    (folder / "cases.json").write_text(json.dumps(cases))
    (folder / "index.html").write_text(CASES_PAGE)
    out = run_page_in_chromium(folder)
    assert "error" not in out, out
    return out
