"""Bulk exact sampling of a mechanism package with a cryptographic bit generator (numpy).

Same rule as the standard-library client (:mod:`designer.deploy.sampler`): a
uniform integer ``u`` in ``[0, 2^b)`` and the row's integer cumulative
thresholds ``c_y``; the report is ``#{y : c_y <= u}`` (``np.searchsorted`` with
``side="right"``), so ``P(Y = y | X = x) = T[x, y] / 2^b`` exactly. The integers
come from raw 64-bit words of the bit generator: for ``b <= 32`` each word gives
two 32-bit halves, each shifted right by ``32 - b``; for ``b > 32`` each word is
shifted right by ``64 - b``. Both keep exactly uniform integers.

Generators:

* default — ChaCha20 (``randomgen.ChaCha``, 20 rounds) keyed with 256 bits from
  :func:`secrets.randbits`: the stream cipher of RFC 8439, used as the Linux
  kernel's CSPRNG; its output is computationally indistinguishable from uniform.
  ``randomgen`` is a numpy ``BitGenerator`` with a vectorised (SIMD) ChaCha.
* ``seed=...`` — numpy's PCG64 seeded with it: reproducible simulation only, NOT
  cryptographic (its state can be recovered from its output); say so to users.

Search (exact, integer only): a guide table per row, ``guide[x, j]`` = the report of
the smallest ``u`` in bucket ``j`` (the top ``g`` bits of ``u``, ``2^g >= 2m``); since the
report grows with ``u``, the report of ``u`` is found by stepping up from
``guide[x, u >> (b - g)]`` while ``c_y <= u`` — on average under one step, with two
table look-ups per report instead of a binary search (faster on large tables).

Structured packages (:mod:`designer.deploy.structured`) are drawn with the same integer
rules as their standard-library samplers, for all reports at once: the symbol's block
(or rank among the sensitive symbols) by ``np.searchsorted`` (precomputed once per symbol
when ``k <= LOOKUP_SYMBOLS``), a uniform column from the
top ``log2 K`` bits of a 32-bit integer, the coin ``u < T`` (and, high-low, ``u < K``) on
a uniform ``u`` in ``[0, 2^b)``, and the parity flip ``c ^= r & -r``
(:func:`designer.deploy.sampler.hadamard_half`). No Python loop per report.

Orbit packages (:mod:`designer.deploy.orbit`) follow :class:`designer.deploy.sampler.OrbitSampler`:
the cell by ``np.searchsorted`` on the class's integer thresholds (one search per class
present in the batch), then uniform integers below per-report bounds by rejection
(:func:`uniform_below`: the top ``ceil(log2 bound)`` bits of a 64-bit word, redrawn while
at or above the bound: exactly uniform).
"""

from __future__ import annotations

import secrets

import numpy as np

from designer.deploy.sampler import HadamardSampler, HighLowHadamardSampler, OrbitSampler, TableSampler, check_counted

#: Words drawn per call, and inputs drawn per pass, bounding memory for large n.
CHUNK = 1 << 22
#: Structured packages with at most this many symbols get a per-symbol look-up table
#: (int32, 4 bytes a symbol) instead of a binary search per report.
LOOKUP_SYMBOLS = 1 << 24


class VectorisedSampler:
    """Exact vectorised sampling of a checked package of any kind (see the module docstring).

    Parameters
    ----------
    document : dict
        A parsed package (structure and SHA-256 are checked).
    seed : int, optional
        Use numpy's PCG64 with this seed (reproducible, not cryptographic)
        instead of ChaCha20 keyed from :mod:`secrets`.
    public_key, sha256, allow_unauthenticated
        What the caller trusts (:func:`designer.deploy.sampler.authenticate`): the author's
        Ed25519 public key, a pinned SHA-256, or the explicit opt-out; one is required.

    Attributes
    ----------
    kind : str
        The package's kind.
    k, n_outputs : int
        Number of inputs (symbols) and outputs.
    inputs, outputs : list of str or None
        The labels of a table package; ``None`` for structured kinds, whose inputs and
        outputs are the indices ``0..k-1`` and ``0..n_outputs-1``.
    """

    def __init__(self, document: dict, seed: int | None = None, *, public_key: str | bytes | None = None,
                 sha256: str | None = None, allow_unauthenticated: bool = False):
        kind = document.get("kind")
        law = _LAWS.get(kind, _TableLaw)(
            document, dict(public_key=public_key, sha256=sha256, allow_unauthenticated=allow_unauthenticated)
        )
        self.trust: str = law.trust
        self.kind: str = kind if kind in _LAWS else "table"
        self._law = law
        self.bits: int = law.bits
        self.k: int = law.k
        self.n_outputs: int = law.n_outputs
        self.inputs: list[str] | None = getattr(law, "inputs", None)
        self.outputs: list[str] | None = getattr(law, "outputs", None)
        self.seed = seed
        if seed is None:
            from randomgen import ChaCha

            self.bit_generator = ChaCha(key=secrets.randbits(256), counter=0, rounds=20)
            self.generator_name = "ChaCha20 (randomgen), 256-bit key from secrets: cryptographic"
        else:
            self.bit_generator = np.random.PCG64(seed)
            self.generator_name = f"PCG64 (numpy) seeded with {seed}: reproducible simulation, NOT cryptographic"

    def uniform_integers(self, n: int, bits: int | None = None) -> np.ndarray:
        """``n`` independent uniform integers in ``[0, 2^bits)`` as uint64 (default: the package's bits)."""
        bits = self.bits if bits is None else bits
        out = np.empty(n, dtype=np.uint64)
        step = CHUNK * 2 if bits <= 32 else CHUNK
        for start in range(0, n, step):
            size = min(n - start, step)
            if bits <= 32:
                halves = self.bit_generator.random_raw((size + 1) // 2).view(np.uint32)[:size]
                out[start : start + size] = halves >> np.uint32(32 - bits)
            else:
                out[start : start + size] = self.bit_generator.random_raw(size) >> np.uint64(64 - bits)
        return out

    def sample(self, inputs) -> np.ndarray:
        """One report (output index) per input index, from the package's exact integer rule."""
        inputs = np.asarray(inputs)
        if inputs.size and (not np.issubdtype(inputs.dtype, np.integer) or inputs.min() < 0 or inputs.max() >= self.k):
            raise ValueError(f"inputs must be integers in 0..{self.k - 1}")
        flat = inputs.ravel().astype(np.int64)
        reports = np.empty(flat.size, dtype=np.int64)
        for start in range(0, flat.size, CHUNK):  # bounds the temporaries of the structured laws
            reports[start : start + CHUNK] = self._law.draw(flat[start : start + CHUNK], self)
        return reports.reshape(inputs.shape)

    def counts(self, x: int, n: int) -> np.ndarray:
        """How often each output is reported in ``n`` draws for input index ``x``.

        Refused (``ValueError`` with the memory estimate) beyond
        :data:`designer.deploy.sampler.MAX_COUNTED_OUTPUTS` outputs; :meth:`drawn_counts` has no such limit.
        """
        check_counted(self.n_outputs)
        return np.bincount(self.sample(np.full(n, x, dtype=np.int64)), minlength=self.n_outputs)

    def drawn_counts(self, x: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The distinct outputs drawn in ``n`` draws for input index ``x`` (increasing) and their counts.

        Drawn in chunks of :data:`CHUNK`: memory is bounded by the chunk and the outputs drawn,
        never by ``n`` or the number of outputs.
        """
        outputs, counts = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        for start in range(0, n, CHUNK):
            drawn, tally = np.unique(self.sample(np.full(min(CHUNK, n - start), x, dtype=np.int64)), return_counts=True)
            outputs, where = np.unique(np.concatenate([outputs, drawn]), return_inverse=True)
            merged = np.zeros(outputs.size, dtype=np.int64)
            np.add.at(merged, where, np.concatenate([counts, tally]))
            counts = merged
        return outputs, counts

    def input_index(self, label: str) -> int:
        """The input index of a label (a table's input label; a structured package's symbol index as text)."""
        if self.inputs is not None:
            if label not in self.inputs:
                shown = ", ".join(self.inputs[:10]) + ("..." if len(self.inputs) > 10 else "")
                raise ValueError(f"{label!r} is not an input of the package ({shown})")
            return self.inputs.index(label)
        if not (label.isascii() and label.isdigit()) or int(label) >= self.k:
            raise ValueError(f"{label!r} is not a symbol index in 0..{self.k - 1} (a {self.kind} package)")
        return int(label)

    def output_label(self, y: int) -> str:
        """The label of output ``y`` (its index as text for a structured package)."""
        return self.outputs[y] if self.outputs is not None else str(y)

    def support_size(self, x: int) -> int:
        """How many outputs input ``x`` can report (without listing them)."""
        return self._law.support_size(x)

    def support(self, x: int) -> np.ndarray:
        """The outputs that input ``x`` can report (every output of a table; its block, or [S] and its own output)."""
        return self._law.support(x)


class _TableLaw:
    """An integer table with a guide table per row (see the module docstring)."""

    def __init__(self, document: dict, trust: dict):
        checked = TableSampler(document, **trust)
        self.trust, self.bits = checked.trust, checked.bits
        self.inputs, self.outputs = checked.inputs, checked.outputs
        self.k, self.n_outputs = len(checked.thresholds), len(self.outputs)
        k, m = self.k, self.n_outputs
        # c_y = 2^b from the row's last positive entry on exceeds every u: the search never steps past that
        # entry (its index is the row's ``last``), so when b = 64 these thresholds are stored as 2^64 - 1
        rows = checked.thresholds
        self._last = np.array([row.index(1 << self.bits) for row in rows], dtype=np.int64)
        if self.bits == 64:
            rows = [[min(value, (1 << 64) - 1) for value in row] for row in rows]
        self._thresholds = np.array(rows, dtype=np.uint64).reshape(k, m).ravel()
        self._guide_bits = min(self.bits, max(1, (2 * m - 1).bit_length()))
        self._shift = np.uint64(self.bits - self._guide_bits)
        starts = np.arange(1 << self._guide_bits, dtype=np.uint64) << self._shift
        self._guide = np.stack([
            np.searchsorted(self._thresholds[x * m : (x + 1) * m], starts, side="right") for x in range(k)
        ]).astype(np.int64).ravel()

    def draw(self, flat: np.ndarray, source: VectorisedSampler) -> np.ndarray:
        uniform = source.uniform_integers(flat.size)
        reports = self._guide[(flat << self._guide_bits) + (uniform >> self._shift).astype(np.int64)]
        base = flat * self.n_outputs
        last = self._last[flat]
        pending = np.flatnonzero((reports < last) & (self._thresholds[base + reports] <= uniform))
        while pending.size:
            reports[pending] += 1
            stepped = reports[pending]
            pending = pending[(stepped < last[pending]) & (self._thresholds[base[pending] + stepped] <= uniform[pending])]
        return reports

    def support_size(self, x: int) -> int:
        return self.n_outputs

    def support(self, x: int) -> np.ndarray:
        return np.arange(self.n_outputs)


class _BlockHadamardLaw:
    """Block HR (:class:`designer.deploy.sampler.HadamardSampler`'s rule, vectorised)."""

    def __init__(self, document: dict, trust: dict):
        checked = HadamardSampler(document, **trust)
        self.trust = checked.trust
        self.bits, self.k, self.n_outputs = checked.bits, checked.k, checked.n_outputs
        self._coin = np.uint64(checked.coin)
        self._starts = np.array(checked.starts, dtype=np.int64)
        self._offsets = np.array(checked.offsets, dtype=np.int64)
        self._shifts = np.array([33 - size.bit_length() for size in checked.hadamard_sizes], dtype=np.uint64)
        self._positions = _Positions(self._starts, "right", self.k)

    def _block(self, flat: np.ndarray) -> np.ndarray:
        return self._positions(flat) - 1

    def draw(self, flat: np.ndarray, source: VectorisedSampler) -> np.ndarray:
        block = self._block(flat)
        column = (source.uniform_integers(flat.size, 32) >> self._shifts[block]).astype(np.int64)
        inside = source.uniform_integers(flat.size) < self._coin
        return self._offsets[block] + _hadamard_half(flat - self._starts[block] + 1, column, inside)

    def support_size(self, x: int) -> int:
        return 1 << (32 - int(self._shifts[self._block(np.array([x]))[0]]))

    def support(self, x: int) -> np.ndarray:
        block = int(self._block(np.array([x]))[0])
        return self._offsets[block] + np.arange(1 << (32 - int(self._shifts[block])))


class _HighLowLaw:
    """High-low HR (:class:`designer.deploy.sampler.HighLowHadamardSampler`'s rule, vectorised)."""

    def __init__(self, document: dict, trust: dict):
        checked = HighLowHadamardSampler(document, **trust)
        self.trust = checked.trust
        self.bits, self.k, self.n_outputs = checked.bits, checked.k, checked.n_outputs
        self._coin, self._keep = np.uint64(checked.coin), np.uint64(checked.keep)
        self._sensitive = np.array(checked.sensitive, dtype=np.int64)
        self._size = checked.hadamard_size
        self._shift = np.uint64(33 - self._size.bit_length())
        self._positions = _Positions(self._sensitive, "left", self.k)

    def _rank(self, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rank among the sensitive symbols (``searchsorted``, left) and whether the symbol is sensitive."""
        rank = self._positions(flat)
        found = self._sensitive[np.minimum(rank, self._sensitive.size - 1)] == flat
        return rank, found

    def draw(self, flat: np.ndarray, source: VectorisedSampler) -> np.ndarray:
        rank, sensitive = self._rank(flat)
        uniform = source.uniform_integers(flat.size)
        column = (source.uniform_integers(flat.size, 32) >> self._shift).astype(np.int64)
        half = _hadamard_half(rank + 1, column, uniform < self._coin)
        own = self._size + flat - rank
        return np.where(sensitive, half, np.where(uniform < self._keep, own, column))

    def support_size(self, x: int) -> int:
        return self._size + (0 if self._rank(np.array([x]))[1][0] else 1)

    def support(self, x: int) -> np.ndarray:
        rank, sensitive = self._rank(np.array([x]))
        head = np.arange(self._size)
        return head if sensitive[0] else np.append(head, self._size + x - rank[0])


class _OrbitLaw:
    """A symmetric design at class level (:class:`designer.deploy.sampler.OrbitSampler`'s rule, vectorised)."""

    def __init__(self, document: dict, trust: dict):
        checked = OrbitSampler(document, **trust)
        self.trust, self._checked = checked.trust, checked
        self.bits, self.k, self.n_outputs = checked.bits, checked.k, checked.n_outputs
        s = checked.structure
        self._sizes = np.array(s.sizes, dtype=np.int64)
        self._columns = np.array(s.columns, dtype=np.int64)
        self._offsets = np.array(checked.offsets, dtype=np.int64)
        self._high, self._low = np.array(s.high, dtype=np.int64), np.array(s.low, dtype=np.int64)
        ceiling = (1 << 64) - 1  # thresholds of 2^64 (bits = 64) are capped; the search is clipped to the last cell
        self._thresholds = np.array([[min(value, ceiling) for value in row] for row in checked.thresholds],
                                    dtype=np.uint64)
        self._last = np.array([row.index(1 << self.bits) for row in checked.thresholds], dtype=np.int64)
        self._index = tuple(np.array(column, dtype=np.int64) for column in s.range_index)
        self._positions = _Positions(self._index[0], "right", self.k)

    def _locate(self, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # int64 positions: indexing by the lookup table's int32 costs 40% more
        return self._checked.structure.locate(flat, lambda x: self._positions(x).astype(np.int64), self._index)

    def draw(self, flat: np.ndarray, source: VectorisedSampler) -> np.ndarray:
        group, rank = self._locate(flat)
        uniform = source.uniform_integers(flat.size)
        cell = np.empty(flat.size, dtype=np.int64)
        for a in np.unique(group).tolist():
            chosen = group == a
            found = np.searchsorted(self._thresholds[a], uniform[chosen], side="right")
            cell[chosen] = np.minimum(found, self._last[a])
        orbit, low = cell // 2, (cell % 2).astype(bool)
        size, period = self._sizes[group], self._columns[orbit]
        high_count = self._high[orbit, group]
        count = np.where(low, self._low[orbit, group], high_count)
        offset = np.where(low, high_count, 0) + uniform_below(count, source)
        constant = count == size
        repeats = np.where(constant, 1, period // size)
        cyclic = (rank - offset) % size + size * uniform_below(repeats, source)
        return self._offsets[orbit] + np.where(constant, uniform_below(np.where(constant, period, 1), source), cyclic)

    def _reported(self, x: int) -> list[tuple[int, int, int]]:
        """``(orbit, first offset, count)`` of the cells input x can report."""
        group = int(self._locate(np.array([x]))[0][0])
        cells = []
        for o in range(self._columns.size):
            j, l = int(self._high[o, group]), int(self._low[o, group])
            h, c = self._checked.structure.cells_high[o][group], self._checked.structure.cells_low[o][group]
            cells += [(o, 0, j)] if h else []
            cells += [(o, j, l)] if c else []
        return cells

    def support_size(self, x: int) -> int:
        n = int(self._sizes[self._locate(np.array([x]))[0][0]])
        return sum(int(self._columns[o]) if count == n else count * int(self._columns[o]) // n
                   for o, _, count in self._reported(x))

    def support(self, x: int) -> np.ndarray:
        group, rank = (int(value[0]) for value in self._locate(np.array([x])))
        n = int(self._sizes[group])
        parts = []
        for o, first, count in self._reported(x):
            period = int(self._columns[o])
            if count == n:
                parts.append(self._offsets[o] + np.arange(period))
                continue
            residues = (rank - first - np.arange(count)) % n
            parts.append(self._offsets[o] + (residues[:, None] + n * np.arange(period // n)[None, :]).ravel())
        return np.unique(np.concatenate(parts))


def uniform_below(bounds: np.ndarray, source: VectorisedSampler) -> np.ndarray:
    """Exactly uniform integers in ``[0, bound)`` per entry (``1 <= bound <= 2^53``), by rejection.

    Each draw keeps the top ``w`` bits of a 64-bit word, ``2^w >= bound`` (``w`` from ``log2``, which
    is exact at powers of two and monotone, so ``w`` is never below ``bound``'s bit length), and is
    redrawn while it is ``>= bound``: at most half the draws are redrawn on average.
    """
    bounds = np.asarray(bounds, dtype=np.int64)
    width = np.where(bounds > 1, np.floor(np.log2(np.maximum(bounds - 1, 1).astype(float))) + 1, 0).astype(np.int64)
    out = np.zeros(bounds.size, dtype=np.int64)
    pending = np.flatnonzero(width > 0)
    while pending.size:
        words = source.bit_generator.random_raw(pending.size)
        drawn = (words >> (64 - width[pending]).astype(np.uint64)).astype(np.int64)
        accepted = drawn < bounds[pending]
        out[pending[accepted]] = drawn[accepted]
        pending = pending[~accepted]
    return out


class _Positions:
    """``np.searchsorted(keys, x, side)`` for symbols ``x < k``: an int32 table up to LOOKUP_SYMBOLS, else a search."""

    def __init__(self, keys: np.ndarray, side: str, k: int):
        self.keys, self.side = keys, side
        self.table = np.searchsorted(keys, np.arange(k), side=side).astype(np.int32) if k <= LOOKUP_SYMBOLS else None

    def __call__(self, flat: np.ndarray) -> np.ndarray:
        return self.table[flat] if self.table is not None else np.searchsorted(self.keys, flat, side=self.side)


def _hadamard_half(row: np.ndarray, column: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """:func:`designer.deploy.sampler.hadamard_half` for arrays (``row >= 1`` where the result is used)."""
    plus = (np.bitwise_count(row & column) & 1) == 0
    return column ^ np.where(plus != inside, row & -row, 0)


_LAWS = {"table": _TableLaw, "block-hadamard": _BlockHadamardLaw, "high-low-hadamard": _HighLowLaw,
         "orbit": _OrbitLaw}
