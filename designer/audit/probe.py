"""The state probe: does a client's report depend on the calls before it?

E-LDP (Definition 2 of context-aware-ldp.md) is a property of a channel
``Q(y | x)``: each user's report depends on that user's input and fresh
randomness only. The audit's main tests draw every input in same-input batches,
where a client that keeps state across calls (the previous input, reused
randomness) looks like a channel: the previous call's input is the current one.
The probe asks the source for a random sequence of inputs, one call each
(:meth:`~designer.audit.sources.ReportSource.draw_sequence`), in *pairs* of
calls ``(a_j, b_j)`` with every input drawn independently and uniformly from
``0..k-1``, and tests two hypotheses of a stateless client on the second call's
report ``r(b_j)``:

* **previous input** — ``r(b_j)`` is independent of ``a_j``;
* **previous report** — ``r(b_j)`` is independent of ``r(a_j)`` (reused or
  correlated randomness), ``r(a_j)`` grouped by its value when it takes few,
  else by octiles of a number or its most frequent values (:func:`report_groups`).

For a stateless client the pairs are independent and, within a pair, ``r(b_j)``
depends on ``b_j`` and fresh randomness only, both independent of ``a_j`` and
``r(a_j)``: the ``(group, report)`` pairs are independent draws of a product
distribution. Each hypothesis is Pearson's chi-square test of independence
(:func:`independence_test`) on the table of groups by report cells — the whole
report (its values, or bins), and for vectors each coordinate too, the largest
statistic over these features — with a permutation p-value (exact: the groups
are exchangeable under the hypothesis) up to :data:`PERMUTATION_LIMIT`, else the
chi-square distribution (cells pooled to expected counts of at least
:data:`MIN_EXPECTED`) with Bonferroni over the features. The probe spends
:data:`PROBE_ERROR_SHARE` of the audit's error, Holm across its two
hypotheses; the main tests the rest, so a ``violated`` verdict, stateful or
not, is wrong with probability at most ``1 - confidence`` (Bonferroni across
the probe and the main tests). The witness is the cell of the table furthest
above independence: "after a call with input 2, the report was 2 in 41% of
calls, against 21% after the other inputs".

What is not tested: state across runs of a ``--command`` program (a sequence of
up to :data:`SEQUENCE_CHUNK` calls is one run), a dependence on calls further back
than the previous one that leaves the previous call's input and report
uninformative, and dependence that none of the features (the report's cells,
each coordinate's) shows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from designer.audit.reports import concatenate_reports, is_text
from designer.audit.sources import ReportSource
from designer.audit.statistics import bonferroni_rejections, holm_rejections
from designer.audit.verdict import AuditResult

#: Share of the budget's reports the probe draws (of the reports per input, about the same share).
PROBE_SHARE = 0.1
#: Share of the audit's error (``1 - confidence``) the probe spends, Holm across its two hypotheses.
PROBE_ERROR_SHARE = 0.2
#: Calls per sequence sent to the source at once (even: pairs are never split).
SEQUENCE_CHUNK = 8192
#: Groups of the previous-report hypothesis, at most.
REPORT_GROUPS = 8
#: Cells of a report feature, at most (values, or quantile bins of a number, or the most frequent values).
REPORT_CELLS = 32
#: Coordinates of vector reports tested as features of their own, at most (the first ones).
MAX_FEATURES = 64
#: Fewest pairs of calls worth a probe (below, the budget is too small and the probe is skipped).
MIN_PROBE_PAIRS = 100
#: A group with fewer second reports than this is left out of its test.
MIN_GROUP = 20
#: Permutations of the exact test.
PERMUTATIONS = 999
#: Pairs times features up to which the p-value is by permutation (beyond, the chi-square distribution).
PERMUTATION_LIMIT = 400_000
#: Cells of the asymptotic test are pooled until every expected count is at least this.
MIN_EXPECTED = 5.0


@dataclass(frozen=True)
class IndependenceTest:
    """One hypothesis of the probe: its p-value, its verdict (after Holm) and the witness cell."""

    hypothesis: str
    groups: int
    pairs: int
    statistic: float
    p_value: float
    method: str
    witness: dict
    violated: bool = False

    def to_dict(self) -> dict:
        return {"hypothesis": self.hypothesis, "groups": self.groups, "pairs": self.pairs,
                "statistic": self.statistic, "p_value": self.p_value, "method": self.method,
                "violated": self.violated, "witness": self.witness}


@dataclass
class ProbeResult:
    """The state probe: ``pairs`` pairs of calls and, per hypothesis, its test (None: too few reports)."""

    pairs: int
    error: float
    tests: dict[str, IndependenceTest | None]

    @property
    def violated(self) -> bool:
        return any(test is not None and test.violated for test in self.tests.values())

    def to_dict(self) -> dict:
        return {"pairs_of_calls": self.pairs, "error": self.error, "violated": self.violated,
                "tests": {name: None if test is None else test.to_dict() for name, test in self.tests.items()}}


def draw_pairs(source: ReportSource, k: int, pairs: int, rng: np.random.Generator, until: float | None = None,
               deadline: float | None = None, per_call: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """``2 * pairs`` calls of the source on uniformly random inputs, in sequences of at most
    :data:`SEQUENCE_CHUNK`: the inputs and the reports, in call order. With ``until`` (a
    ``time.perf_counter()`` instant) no sequence starts after it, and none longer than ``per_call`` seconds
    a call would end by it (fewer pairs, maybe none); every one must end before ``deadline``."""
    inputs, reports, drawn = [np.zeros(0, dtype=np.int64)], [], 0
    while drawn < pairs:
        size = min(pairs - drawn, SEQUENCE_CHUNK // 2)
        if until is not None:
            left = until - time.perf_counter()
            size = min(size, int(left / (2 * per_call))) if per_call > 0 else size * (left > 0)
        if size < 1:
            break
        sequence = rng.integers(0, k, 2 * size)
        remaining = None if deadline is None else max(deadline - time.perf_counter(), 0.001)
        reports.append(source.draw_sequence(sequence, rng, remaining))
        inputs.append(sequence)
        drawn += size
    joined = concatenate_reports(reports, f"source {source.description} (the state probe)", source.separator)
    return np.concatenate(inputs), joined


def probe_state(inputs: np.ndarray, reports: np.ndarray, k: int, confidence: float, rng: np.random.Generator,
                correction: str = "holm") -> ProbeResult:
    """Test the two hypotheses of a stateless client on pairs of calls (see the module docstring).

    Parameters
    ----------
    inputs, reports : arrays of even length
        Calls in order (:func:`draw_pairs`): pair j is calls ``2j`` and ``2j + 1``.
    k : int
    confidence : float
        Of the whole audit; the probe spends :data:`PROBE_ERROR_SHARE` of ``1 - confidence``.
    rng : Generator
        For the permutations.
    correction : "holm" or "bonferroni"
        Across the two hypotheses.
    """
    error = (1 - confidence) * PROBE_ERROR_SHARE
    first, second = reports[0::2], reports[1::2]
    previous = report_groups(first)
    groupings = {"previous input": (inputs[0::2], [f"input {a}" for a in range(k)]),
                 "previous report": previous}
    features = report_features(second)
    tests = {name: independence_test(name, labels, names, features, rng) for name, (labels, names) in groupings.items()}
    done = [name for name, test in tests.items() if test is not None]
    p_values = np.array([tests[name].p_value for name in done])
    reject = holm_rejections if correction == "holm" else bonferroni_rejections
    for name, violated in zip(done, reject(p_values, error)):
        tests[name] = replace(tests[name], violated=bool(violated))
    return ProbeResult(len(first), error, tests)


def independence_test(hypothesis: str, groups: np.ndarray, group_names: list[str],
                      features: list[tuple[str, np.ndarray, list[str]]],
                      rng: np.random.Generator) -> IndependenceTest | None:
    """Pearson's chi-square test of independence of ``groups`` and the report cells, the largest statistic over
    ``features`` (see the module docstring); None when fewer than two groups have :data:`MIN_GROUP` reports."""
    counts = np.bincount(groups, minlength=len(group_names))
    kept = np.flatnonzero(counts >= MIN_GROUP)
    if len(kept) < 2:
        return None
    rows = np.full(len(group_names), -1)
    rows[kept] = np.arange(len(kept))
    mask = rows[groups] >= 0
    labels = rows[groups][mask]
    cells = [(name, codes[mask], names) for name, codes, names in features]
    statistics = [_chi_square(labels, codes, len(kept), len(names)) for _, codes, names in cells]
    observed = max(statistics)
    pairs = int(mask.sum())
    if pairs * len(cells) <= PERMUTATION_LIMIT:
        exceed = 0
        for _ in range(PERMUTATIONS):
            shuffled = rng.permutation(labels)
            exceed += max(_chi_square(shuffled, codes, len(kept), len(names)) for _, codes, names in cells) >= observed
        p_value, method = (1 + exceed) / (PERMUTATIONS + 1), f"chi-square, {PERMUTATIONS} permutations"
    else:
        from scipy.special import chdtrc

        tails = [chdtrc(*_pooled_chi_square(labels, codes, len(kept), len(names))[::-1]) for _, codes, names in cells]
        p_value, method = min(1.0, len(cells) * float(min(tails))), "chi-square distribution, Bonferroni"
    best = int(np.argmax(statistics))
    witness = _witness(labels, cells[best], [group_names[g] for g in kept])
    return IndependenceTest(hypothesis, len(kept), pairs, float(observed), float(p_value), method, witness)


def _table(labels: np.ndarray, codes: np.ndarray, rows: int, columns: int) -> np.ndarray:
    return np.bincount(labels * columns + codes, minlength=rows * columns).reshape(rows, columns).astype(float)


def _chi_square(labels: np.ndarray, codes: np.ndarray, rows: int, columns: int) -> float:
    """Pearson's statistic ``sum (O - E)^2 / E`` of the table (cells with ``E = 0`` left out)."""
    table = _table(labels, codes, rows, columns)
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / max(table.sum(), 1)
    positive = expected > 0
    return float(np.sum((table[positive] - expected[positive]) ** 2 / expected[positive]))


def _pooled_chi_square(labels: np.ndarray, codes: np.ndarray, rows: int, columns: int) -> tuple[int, float]:
    """(degrees of freedom, statistic) after pooling the columns whose smallest expected count is below
    :data:`MIN_EXPECTED` (rarest first) into one."""
    table = _table(labels, codes, rows, columns)
    totals = table.sum(axis=0)
    order = np.argsort(totals)
    smallest_row = table.sum(axis=1).min() / max(table.sum(), 1)
    pooled = [column for column in order if totals[column] * smallest_row < MIN_EXPECTED]
    kept = [column for column in range(columns) if column not in set(pooled) and totals[column] > 0]
    merged = table[:, kept]
    if pooled and table[:, pooled].sum() > 0:
        merged = np.column_stack([merged, table[:, pooled].sum(axis=1)])
    if merged.shape[1] < 2:
        return 1, 0.0
    expected = np.outer(merged.sum(axis=1), merged.sum(axis=0)) / merged.sum()
    return (rows - 1) * (merged.shape[1] - 1), float(np.sum((merged - expected) ** 2 / expected))


def _witness(labels: np.ndarray, feature: tuple[str, np.ndarray, list[str]], group_names: list[str]) -> dict:
    """The cell furthest above independence: its group, its report cell, and the frequencies in and out."""
    name, codes, cell_names = feature
    table = _table(labels, codes, len(group_names), len(cell_names))
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
    residual = np.where(expected > 0, (table - expected) / np.sqrt(np.where(expected > 0, expected, 1)), -np.inf)
    group, cell = np.unravel_index(int(np.argmax(residual)), table.shape)
    rows = table.sum(axis=1)
    return {"group": group_names[group], "feature": name, "cell": cell_names[cell],
            "count": int(table[group, cell]), "calls": int(rows[group]),
            "count_others": int(table[:, cell].sum() - table[group, cell]),
            "calls_others": int(rows.sum() - rows[group])}


def report_features(reports: np.ndarray) -> list[tuple[str, np.ndarray, list[str]]]:
    """The cells the probe tests on: the whole report (:func:`report_cells`) and, for vectors, each of the first
    :data:`MAX_FEATURES` coordinates; each ``(name, codes, cell names)``."""
    features = [("report", *report_cells(reports, REPORT_CELLS))]
    if reports.ndim == 2 and reports.dtype != object:
        for j in range(min(reports.shape[1], MAX_FEATURES)):
            codes, names = report_cells(reports[:, j], REPORT_CELLS)
            if len(names) > 1:
                features.append((f"report[{j}]", codes, [name.replace("report", f"report[{j}]", 1) for name in names]))
    return features


def report_groups(reports: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Groups of the first calls' reports (a function of those reports only, :func:`report_cells`)."""
    return report_cells(reports, REPORT_GROUPS)


def report_cells(reports: np.ndarray, most: int) -> tuple[np.ndarray, list[str]]:
    """At most ``most`` cells of reports: each value when there are at most ``most``, else quantile bins of a
    number, else the ``most - 1`` most frequent values and the rest; the codes and the cells' names."""
    if reports.ndim == 2 and reports.dtype != object:
        keys = np.ascontiguousarray(reports, dtype=np.float64).view(np.dtype((np.void, 8 * reports.shape[1]))).ravel()
        labels = [tuple(row) for row in reports.tolist()]
    else:
        keys = reports
        labels = reports.tolist()
    values, first_index, codes, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
    if len(values) <= most:
        return codes.ravel(), [f"report = {labels[i]!r}" for i in first_index]
    if reports.ndim == 1 and not is_text(reports) and reports.dtype != object:
        edges = np.unique(np.quantile(reports.astype(float), np.linspace(0, 1, most + 1)[1:-1]))
        groups = np.searchsorted(edges, reports, side="right")
        names = [f"report < {edges[0]:.4g}"] + [f"{low:.4g} <= report < {high:.4g}" for low, high in
                                                zip(edges[:-1], edges[1:])] + [f"report >= {edges[-1]:.4g}"]
        return groups, names
    top = np.argsort(-counts, kind="stable")[:most - 1]
    position = np.full(len(values), most - 1)
    position[top] = np.arange(len(top))
    return position[codes.ravel()], [f"report = {labels[first_index[i]]!r}" for i in top] + ["another report"]


def combine(result: AuditResult, probed: tuple[np.ndarray, np.ndarray] | None, k: int, confidence: float,
            rng: np.random.Generator, **options) -> AuditResult:
    """The main result with the probe's tests (``probed``: its calls) and the whole audit's confidence."""
    if probed is None:
        return replace(result, confidence=confidence)
    state = probe_state(*probed, k, confidence, rng, options.get("correction", "holm"))
    verdict = "violated" if result.violated or state.violated else result.verdict
    return replace(result, confidence=confidence, probe=state, verdict=verdict)
