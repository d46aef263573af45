"""Distinguishing events: which reports an audit counts for a pair (x, x').

An audit compares ``P(S | x)`` with ``P(S | x')`` for an event ``S`` chosen on
the *training* split. Reports are first mapped to *cells* by an event space,
then :func:`best_cell_set` ranks the cells by their estimated likelihood ratio
and keeps the top ones (the Neyman–Pearson ordering: the set of outputs with
the largest ratio ``P(y|x)/P(y|x')``) — as many as maximise the lower bound
predicted for the fresh split (chosen on one half of the training split,
predicted on the other). Three event spaces:

* :class:`OutputSpace` — the cells are the distinct reports themselves (GRR,
  Hadamard response, unary encoding with few bits, any output space of at most
  :data:`MAX_OUTPUTS` values).
* :class:`CoordinateSpace` — for large or continuous spaces of vector reports
  (unary encoding with many bits, Laplace histogram encoding): a classifier.
  Each coordinate is cut into bins (its distinct values if few, else pooled
  training terciles); per pair, the coordinates whose bin distributions differ
  most between x and x' (likelihood-ratio G-test) are kept, at most
  :data:`MAX_COORDINATES`, and the cells are their bin combinations — a naive
  Bayes score whose threshold the ranking chooses.
* :class:`EitherSpace` — few vector reports: outputs and classifier both, the
  better prediction on the training split decides per pair.
* :class:`SupportSpace` — for hashed reports (local hashing's ``(value, seed)``)
  whose meaning only the protocol knows: a support function
  ``support(reports, z) -> bool`` ("the report supports input z", the *pure*
  protocols of Wang et al., USENIX Security 2017); the cells are
  ``(supports x, supports x')``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from designer.audit.statistics import log_ratio_lower_bound
from designer.audit.usercode import call_user

#: Output spaces up to this many distinct reports are audited output by output.
MAX_OUTPUTS = 4096
#: A coordinate with at most this many distinct training values keeps them as bins.
MAX_CATEGORIES = 32
#: Quantiles that cut a continuous coordinate into bins (pooled training terciles).
BIN_QUANTILES = (1 / 3, 2 / 3)
#: At most this many coordinates define the cells of a pair.
MAX_COORDINATES = 3
#: Family-wise level of the G-tests that keep a coordinate (split over the coordinates).
COORDINATE_LEVEL = 1e-3
#: Reports whose distinct values are counted first when deciding between outputs and a classifier.
PROBE_REPORTS = 8 * MAX_OUTPUTS
#: Additive smoothing of the cell counts that rank the cells.
RANK_SMOOTHING = 0.5


@dataclass(frozen=True)
class CellMap:
    """Reports (encoded by an event space) -> integer cells ``0..n_cells-1``, for one pair."""

    cells: Callable[[np.ndarray], np.ndarray]
    n_cells: int
    describe_cell: Callable[[int], str]


@dataclass(frozen=True)
class Event:
    """A distinguishing event: a set of cells of a :class:`CellMap`."""

    cell_map: CellMap
    chosen: np.ndarray
    predicted_lower_bound: float
    held_out_bound: float = -np.inf
    attack: str = ""
    summary: str | None = None
    #: Each component space's own event, as ``(space kind, event)`` (:class:`EitherSpace`).
    alternatives: tuple = ()

    def dominates(self, other: "Event") -> bool:
        """Better than ``other`` on both training criteria: held-out bound and predicted fresh bound.

        The held-out bound (at the held-out part's own size) penalises an event
        whose held-out part is small (the learned attacks spend half of the
        training split on fitting: the largest of noisy predictions is
        optimistic); the predicted bound keeps a rare event with an extreme
        ratio (a debug report), whose bound grows with the fresh size.
        """
        return self.held_out_bound > other.held_out_bound and self.predicted_lower_bound > other.predicted_lower_bound

    def mask(self, encoded: np.ndarray) -> np.ndarray:
        """Which reports (encoded) fall in the event (a lookup table of the cells: a few times faster than
        ``np.isin``; the cell -1, an output unseen when the events were chosen, is in no event: it reads the
        table's last entry)."""
        table = np.zeros(self.cell_map.n_cells + 1, dtype=bool)
        table[self.chosen] = True
        return table[self.cell_map.cells(encoded)]

    def count(self, encoded: np.ndarray) -> int:
        return int(self.mask(encoded).sum())

    @property
    def description(self) -> str:
        if self.summary is not None:
            return self.summary
        shown = [self.cell_map.describe_cell(int(cell)) for cell in self.chosen[:4]]
        more = f" or ... ({len(self.chosen)} cells)" if len(self.chosen) > 4 else ""
        return " or ".join(shown) + more


def best_cell_set(cells_x: np.ndarray, cells_other: np.ndarray, n_cells: int, error: float,
                  test_x: int | None = None, test_other: int | None = None,
                  order: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """The top cells by estimated ratio, as many as maximise the bound; and an honest prediction of it.

    The training reports are halved. The first halves choose the event: cells
    ranked by smoothed log-ratio of counts, as many kept as maximise the
    Clopper–Pearson bound of their proportions at the fresh split's sizes. The
    second halves, untouched by that choice, predict the fresh split's bound for
    that event — so pairs and event spaces are compared on unbiased predictions,
    not on how well they overfit.

    Parameters
    ----------
    cells_x, cells_other : int arrays
        Cells of the training reports of x and of x'.
    n_cells : int
    error : float
        The error of the test's lower bound (:func:`log_ratio_lower_bound`).
    test_x, test_other : int, optional
        Sizes of the fresh split (default: the halves' sizes).
    order : int array, optional
        A fixed order of the cells (a threshold on a score: the cells from the
        highest score down); only the prefix length is chosen on the data.

    Returns
    -------
    (chosen cells, predicted lower bound of log P(S|x)/P(S|x') on the fresh split,
    the lower bound on the second halves at their own sizes — an honest, noise-penalised
    score that compares event spaces whose second halves differ in size)
    """
    half_x, half_other = max(cells_x.size // 2, 1), max(cells_other.size // 2, 1)
    rank_x, rank_other = cells_x[:half_x], cells_other[:half_other]
    check_x, check_other = cells_x[half_x:], cells_other[half_other:]
    if check_x.size == 0 or check_other.size == 0:  # too few reports to halve: choose and predict on all
        check_x, check_other = cells_x, cells_other
    chosen = _top_cells(rank_x, rank_other, n_cells, error, test_x, test_other, order)
    if chosen.size == 0:
        return chosen, -np.inf, -np.inf
    inside_x = np.isin(check_x, chosen).sum()
    inside_other = np.isin(check_other, chosen).sum()
    predicted = _scaled_bound(inside_x, check_x.size, inside_other, check_other.size, error, test_x, test_other)
    held_out = log_ratio_lower_bound(inside_x, check_x.size, inside_other, check_other.size, error)
    if check_x is not cells_x:  # cross-fitting: the halves swap roles, and the two predictions are averaged
        swapped = _top_cells(check_x, check_other, n_cells, error, test_x, test_other, order)
        if swapped.size:
            predicted = (predicted + _scaled_bound(np.isin(rank_x, swapped).sum(), rank_x.size,
                                                   np.isin(rank_other, swapped).sum(), rank_other.size, error,
                                                   test_x, test_other)) / 2
    return chosen, float(predicted), float(held_out)


def _top_cells(cells_x, cells_other, n_cells, error, test_x, test_other, order) -> np.ndarray:
    """The prefix of the cells by ratio (or of ``order``) whose proportions give the largest bound."""
    counts_x = np.bincount(cells_x, minlength=n_cells).astype(float)
    counts_other = np.bincount(cells_other, minlength=n_cells).astype(float)
    seen = np.flatnonzero(counts_x > 0)
    if seen.size == 0:
        return np.zeros(0, dtype=np.int64)
    if order is None:
        ratio = np.log((counts_x[seen] + RANK_SMOOTHING) / (cells_x.size + 1)) - np.log(
            (counts_other[seen] + RANK_SMOOTHING) / (cells_other.size + 1)
        )
        order = seen[np.argsort(-ratio, kind="stable")]
    return order[: _best_prefix(counts_x[order], cells_x.size, counts_other[order], cells_other.size, error,
                                test_x, test_other)].astype(np.int64)


def _scaled_bound(count_x, size_x, count_other, size_other, error, test_x, test_other):
    """The bound the proportions ``count / size`` would give at the fresh split's sizes."""
    scale_x = (test_x or size_x) / size_x
    scale_other = (test_other or size_other) / size_other
    return log_ratio_lower_bound(
        np.asarray(count_x) * scale_x, size_x * scale_x, np.asarray(count_other) * scale_other, size_other * scale_other, error
    )


def _best_prefix(counts_x, size_x, counts_other, size_other, error, test_x, test_other) -> int:
    bounds = _scaled_bound(np.cumsum(counts_x), size_x, np.cumsum(counts_other), size_other, error, test_x, test_other)
    return int(np.argmax(bounds)) + 1


class EventSpace(ABC):
    """Encodes reports once per input and split; chooses an event per pair (an interface)."""

    kind = "events"

    @abstractmethod
    def encode(self, reports: np.ndarray):
        """The reports of one input and split in this space's encoding."""

    @abstractmethod
    def select(self, x: int, x_prime: int, train_x, train_other, error: float,
               test_x: int | None = None, test_other: int | None = None) -> Event:
        """The event for ``(x, x')`` chosen on encoded training reports (fresh split sizes ``test_x``, ``test_other``)."""


class CellSpace(EventSpace):
    """An event space that partitions reports into cells per pair; the event is a set of cells."""

    @abstractmethod
    def cell_map(self, x: int, x_prime: int, train_x: np.ndarray, train_other: np.ndarray) -> CellMap:
        """The cells of the pair ``(x, x')`` built from encoded training reports."""

    def select(self, x: int, x_prime: int, train_x, train_other, error: float,
               test_x: int | None = None, test_other: int | None = None) -> Event:
        cell_map = self.cell_map(x, x_prime, train_x, train_other)
        chosen, predicted, held_out = best_cell_set(
            cell_map.cells(train_x), cell_map.cells(train_other), cell_map.n_cells, error, test_x, test_other
        )
        return Event(cell_map, chosen, predicted, held_out, attack=self.kind)


class OutputSpace(CellSpace):
    """Every distinct report is a cell (a finite output space)."""

    kind = "outputs"

    def __init__(self, all_reports: list[np.ndarray], alphabet: int | None = None, values: np.ndarray | None = None):
        """``values``: the distinct reports when already known (:func:`_unique_reports` of ``all_reports``).

        Outputs are distinct when their values or kinds differ: ``7`` is not ``7.0``, ``-0.0`` is not ``0.0``
        (float outputs are compared by their bits). With an ``alphabet``, text reports ``"0"``, ``"1"``, ...
        are its outputs too (a text source's canonical lines), and any other report is outside it.
        """
        if alphabet is not None:
            self.values = np.arange(alphabet)
        elif values is not None:
            self.values = values
        else:
            joined = np.concatenate(all_reports) if all_reports else np.empty(0)
            self.values = _unique_reports(joined)
        self._index = {_key(value): index for index, value in enumerate(self.values)}
        if alphabet is not None:
            self._index.update({str(value): value for value in range(alphabet)})
        #: Cell of values outside :attr:`values` (None: such a report is an error).
        self.unseen_cell: int | None = None
        self._rows = None
        if self.values.ndim == 2 and self.values.dtype != object:  # vectors: compare rows as bytes, vectorised
            keys = _row_keys(self.values)
            self._row_order = np.argsort(keys, kind="stable")
            self._rows = keys[self._row_order]
        #: Float outputs by their bits (sorted): ``-0.0`` and ``0.0`` are two outputs.
        self._bits = _float_bits(self.values) if self.values.ndim == 1 and self.values.dtype.kind == "f" else None

    @property
    def n_outputs(self) -> int:
        return len(self.values)

    def encode(self, reports: np.ndarray) -> np.ndarray:
        if reports.ndim == 1 and reports.dtype != object and np.issubdtype(reports.dtype, np.integer) and (
            self.values.dtype != object and self.values.ndim == 1 and np.issubdtype(self.values.dtype, np.integer)
        ):
            positions = np.searchsorted(self.values, reports)
            positions = np.clip(positions, 0, len(self.values) - 1)
            if np.all(self.values[positions] == reports):
                return positions.astype(np.int64)
        if self._bits is not None and reports.ndim == 1 and reports.dtype.kind == "f":
            keys = _float_bits(reports)
            positions = np.clip(np.searchsorted(self._bits, keys), 0, len(self._bits) - 1)
            found = self._bits[positions] == keys
            if found.all() or self.unseen_cell is not None:
                return np.where(found, positions, self.unseen_cell if self.unseen_cell is not None else -1)
            raise ValueError(f"report {reports[np.flatnonzero(~found)[0]]!r} is outside the output alphabet")
        if self._rows is not None and reports.ndim == 2 and reports.dtype != object and reports.shape[1] == self.values.shape[1]:
            keys = _row_keys(reports)
            positions = np.clip(np.searchsorted(self._rows, keys), 0, len(self._rows) - 1)
            if np.all(self._rows[positions] == keys):
                return self._row_order[positions].astype(np.int64)
        if self.unseen_cell is not None:  # reports drawn after the events were chosen: unseen values are in no event
            return np.fromiter((self._index.get(_key(report), self.unseen_cell) for report in reports), dtype=np.int64,
                               count=len(reports))
        try:
            return np.fromiter((self._index[_key(report)] for report in reports), dtype=np.int64, count=len(reports))
        except KeyError as error:
            raise ValueError(f"report {error.args[0]!r} is outside the output alphabet") from None

    def cell_map(self, x, x_prime, train_x, train_other) -> CellMap:
        return CellMap(lambda encoded: encoded, self.n_outputs, lambda cell: f"report = {_show(self.values[cell])}")


class CoordinateSpace(CellSpace):
    """Vector reports cut into per-coordinate bins; per pair, cells on the most telling coordinates."""

    kind = "coordinates"

    def __init__(self, train_reports: list[np.ndarray]):
        pooled = np.concatenate([np.asarray(r, float).reshape(len(r), -1) for r in train_reports])
        self.dimension = pooled.shape[1]
        self.edges: list[np.ndarray] = []
        self.categorical: list[bool] = []
        for column in pooled.T:
            distinct = np.unique(column)
            if distinct.size <= MAX_CATEGORIES:
                self.edges.append(distinct)
                self.categorical.append(True)
            else:
                self.edges.append(np.unique(np.quantile(column, BIN_QUANTILES)))
                self.categorical.append(False)
        self.n_bins = np.array([e.size if c else e.size + 1 for e, c in zip(self.edges, self.categorical)])
        self.bins = int(self.n_bins.max())
        self._bin_counts: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def encode(self, reports: np.ndarray) -> np.ndarray:
        values = np.asarray(reports).reshape(len(reports), -1)
        if values.shape[1] != self.dimension:
            raise ValueError(f"vector reports have {values.shape[1]} coordinates, expected {self.dimension}")
        # one byte a coordinate while the bins fit (the encodings of 16 million reports stay small)
        encoded = np.empty(values.shape, dtype=np.uint8 if self.bins <= 256 else np.int64)
        for j, (edges, categorical) in enumerate(zip(self.edges, self.categorical)):
            column = values[:, j].astype(float)
            if categorical:  # a value unseen in training falls in the bin of the nearest value below
                encoded[:, j] = np.clip(np.searchsorted(edges, column, side="right") - 1, 0, edges.size - 1)
            else:
                encoded[:, j] = np.searchsorted(edges, column, side="right")
        return encoded

    def bin_counts(self, encoded: np.ndarray) -> np.ndarray:
        """``counts[j, b]``: how many reports have coordinate j in bin b (kept per encoded array)."""
        key = id(encoded)
        if key not in self._bin_counts or self._bin_counts[key][0] is not encoded:
            counts = np.zeros((self.dimension, self.bins))
            for j in range(self.dimension):
                counts[j] = np.bincount(encoded[:, j], minlength=self.bins)[: self.bins]
            self._bin_counts[key] = (encoded, counts)
        return self._bin_counts[key][1]

    def coordinates(self, counts_x: np.ndarray, counts_other: np.ndarray) -> np.ndarray:
        """The coordinates whose bins differ most (G-test of homogeneity, Bonferroni over coordinates)."""
        from scipy.special import chdtrc

        total = counts_x + counts_other
        n_x, n_other = counts_x.sum(axis=1, keepdims=True), counts_other.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            expected_x = total * n_x / (n_x + n_other)
            expected_other = total * n_other / (n_x + n_other)
            terms = np.where(counts_x > 0, counts_x * np.log(counts_x / expected_x), 0.0) + np.where(
                counts_other > 0, counts_other * np.log(counts_other / expected_other), 0.0
            )
        statistic = 2 * terms.sum(axis=1)
        p_values = chdtrc(np.maximum(self.n_bins - 1, 1), statistic)
        order = np.argsort(p_values, kind="stable")
        kept = [j for j in order[:MAX_COORDINATES] if p_values[j] <= COORDINATE_LEVEL / self.dimension]
        return np.array(kept or order[:1].tolist(), dtype=np.int64)

    def cell_map(self, x, x_prime, train_x, train_other) -> CellMap:
        kept = self.coordinates(self.bin_counts(train_x), self.bin_counts(train_other))
        radix = np.cumprod(np.concatenate([[1], self.n_bins[kept][:-1]])).astype(np.int64)
        n_cells = int(np.prod(self.n_bins[kept]))

        def describe(cell: int) -> str:
            parts = []
            for j, weight, size in sorted(zip(kept, radix, self.n_bins[kept])):
                parts.append(self._describe_bin(int(j), int(cell // weight % size)))
            return "(" + " and ".join(parts) + ")"

        return CellMap(lambda encoded: encoded[:, kept] @ radix, n_cells, describe)

    def _describe_bin(self, j: int, b: int) -> str:
        edges = self.edges[j]
        if self.categorical[j]:
            return f"report[{j}] = {edges[b]:g}"
        if b == 0:
            return f"report[{j}] < {edges[0]:.4g}"
        if b == edges.size:
            return f"report[{j}] >= {edges[-1]:.4g}"
        return f"{edges[b - 1]:.4g} <= report[{j}] < {edges[b]:.4g}"


class SupportColumns:
    """Reports of one input with their support columns, computed on demand and kept."""

    def __init__(self, reports: np.ndarray, space: "SupportSpace"):
        self.reports = reports
        self.space = space
        self.columns: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.reports)

    def column(self, z: int) -> np.ndarray:
        if z not in self.columns:
            self.columns[z] = self.space.supports(self.reports, z)
        return self.columns[z]


class SupportSpace(CellSpace):
    """Cells ``2 [report supports x] + [report supports x']`` from a support function."""

    kind = "support"

    def __init__(self, support: Callable, arguments: dict, k: int):
        self.support = support
        self.arguments = arguments
        self.k = k

    def encode(self, reports: np.ndarray) -> SupportColumns:
        return SupportColumns(reports, self)

    def supports(self, reports: np.ndarray, z: int) -> np.ndarray:
        """``support(reports, z, **arguments)`` checked: one boolean per report."""
        n = len(reports)
        answer = np.asarray(call_user(self.support, f"the support function (input {z})", reports, z, **self.arguments))
        if answer.shape != (n,):
            raise ValueError(f"the support function returned shape {answer.shape} for {n} reports, expected ({n},)")
        return answer.astype(bool)

    def cell_map(self, x, x_prime, train_x, train_other) -> CellMap:
        names = [
            f"supports neither {x} nor {x_prime}",
            f"supports {x_prime}, not {x}",
            f"supports {x}, not {x_prime}",
            f"supports both {x} and {x_prime}",
        ]

        def cells(encoded: SupportColumns) -> np.ndarray:
            return 2 * encoded.column(x).astype(np.int64) + encoded.column(x_prime)

        return CellMap(cells, 4, names.__getitem__)


class EitherSpace(EventSpace):
    """Several event spaces at once; per pair, the first space's event unless a later one :meth:`Event.dominates` it."""

    def __init__(self, spaces: list[EventSpace]):
        self.spaces = spaces
        self.kind = "+".join(space.kind for space in spaces)

    def encode(self, reports: np.ndarray) -> tuple:
        return tuple(space.encode(reports) for space in self.spaces)

    def select(self, x, x_prime, train_x, train_other, error, test_x=None, test_other=None) -> Event:
        events = [self._lifted(index, space.select(x, x_prime, train_x[index], train_other[index], error, test_x,
                                                   test_other))
                  for index, space in enumerate(self.spaces)]
        best = events[0]
        for event in events[1:]:
            if event.dominates(best):
                best = event
        alternatives = tuple((space.kind, event) for space, event in zip(self.spaces, events))
        return replace(best, alternatives=alternatives)

    @staticmethod
    def _lifted(index: int, event: Event) -> Event:
        """A component's event, read from the whole :meth:`encode` tuple."""
        inner = event.cell_map
        cell_map = CellMap(lambda encoded: inner.cells(encoded[index]), inner.n_cells, inner.describe_cell)
        return replace(event, cell_map=cell_map)

    def component(self, kind: type) -> tuple[int, EventSpace] | None:
        """The first space of this type and its position in the encodings."""
        for index, space in enumerate(self.spaces):
            if isinstance(space, kind):
                return index, space
        return None


def choose_space(train_reports: list[np.ndarray], all_reports: list[np.ndarray], support: Callable | None = None,
                 arguments: dict | None = None, k: int = 0, alphabet: int | None = None) -> EventSpace:
    """The event space for these reports (see the module docstring for the rules)."""
    if support is not None:
        return SupportSpace(support, arguments or {}, k)
    if alphabet is not None:
        return OutputSpace(all_reports, alphabet)
    kind = np.result_type(*all_reports)
    numeric = kind != object and (np.issubdtype(kind, np.number) or kind == bool)
    if numeric and all_reports[0].ndim == 2 or numeric and kind.kind == "f":
        # a sample of rows shows most large spaces cheaply (unique rows of the whole set sort every
        # row), and a large space is never joined (16 million histogram reports take 2 GB)
        if len(_unique_reports(_first_rows(all_reports, PROBE_REPORTS))) > MAX_OUTPUTS:
            return CoordinateSpace(train_reports)
        joined = np.concatenate(all_reports)
        values = _unique_reports(joined)  # sorted once, kept as the output space's values
        if len(values) > MAX_OUTPUTS:
            return CoordinateSpace(train_reports)
        if joined.ndim == 2:  # few vectors: whole outputs, or the classifier when a few coordinates tell more
            return EitherSpace([OutputSpace(all_reports, values=values), CoordinateSpace(train_reports)])
        return OutputSpace(all_reports, values=values)
    return OutputSpace(all_reports, values=_unique_reports(np.concatenate(all_reports)))


def _first_rows(arrays: list[np.ndarray], n: int) -> np.ndarray:
    """The first ``n`` rows of the arrays joined, without joining the rest."""
    parts, left = [], n
    for array in arrays:
        if left <= 0:
            break
        parts.append(array[:left])
        left -= len(parts[-1])
    return np.concatenate(parts)


def _unique_reports(joined: np.ndarray) -> np.ndarray:
    if joined.dtype == object:
        keys = {}
        for report in joined:
            keys.setdefault(_key(report), report)
        values = np.empty(len(keys), dtype=object)
        for index, report in enumerate(keys.values()):
            values[index] = report
        return values
    if joined.ndim == 2:  # unique rows through their bytes (10x faster than np.unique(axis=0))
        return np.unique(_row_keys(joined)).view(np.float64).reshape(-1, joined.shape[1])
    if joined.dtype.kind == "f":  # by their bits: -0.0 and 0.0 are two outputs
        return np.unique(_float_bits(joined)).view(np.float64)
    return np.unique(joined)


def _float_bits(values: np.ndarray) -> np.ndarray:
    """Float values as the int64 bits of their float64 (every distinct float, -0.0 included, its own key)."""
    return np.ascontiguousarray(values, dtype=np.float64).view(np.int64)


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """Each row of a numeric 2-D array as one opaque bytes value (float64: -0.0 and 0.0 differ)."""
    values = np.ascontiguousarray(rows, dtype=np.float64)
    return values.view(np.dtype((np.void, 8 * values.shape[1]))).ravel()


def _key(report):
    """A report as a dictionary key that keeps kinds apart (``7`` and ``7.0``, ``-0.0`` and ``0.0`` differ)."""
    if isinstance(report, np.ndarray):
        return tuple(map(_key, report.tolist()))
    if isinstance(report, np.generic):
        report = report.item()
    if isinstance(report, float):
        return float, report.hex()
    return report


def _show(value) -> str:
    if isinstance(value, np.ndarray):
        return "(" + ",".join(f"{v:g}" for v in value.tolist()) + ")"
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value) if isinstance(value, str) else str(value)
