"""Hadamard response (HR) mechanisms of context-aware-ldp.md, client and server side.

* :class:`BlockHadamardResponse` — block-structured LDP (Definition 4), Section 6.1:
  HR inside every block ``X_j`` with its own Sylvester matrix ``H_{K_j}``,
  ``K_j = 2 ** ceil(log2(k_j + 1))``, blocks of any (non-uniform) sizes and any
  membership; estimator (19); bounds (20).
* :class:`HadamardResponse` — classic epsilon-LDP HR (ref. [23], the paper's
  baseline): the block scheme with a single block.
* :class:`HighLowHadamardResponse` — high-low LDP (Definition 3), Section 5.1:
  channel (13)–(14), estimator (15)–(16), bound (17), ``log2(S + t) <= log2 k + 1`` bits.

Conventions (0-based). A symbol with position ``i`` inside its block (or inside
the sensitive set A) is assigned row ``i + 1`` of the Hadamard matrix — the paper's
"(i+1)th row" of Section 6.1 and Appendix C.1 (eq. (13) writes ``H_S(x, y)`` but
row 0 is all ``+1`` and would make ``p(S_x)`` carry no information; C.1 uses
``S_i`` = row ``i + 1``, which is what we implement). ``S_x`` is the set of
columns where that row is ``+1``, i.e. ``popcount(row & y)`` even.

Reports are global output indices: block ``j``'s column ``y`` is
``offset_j + y`` with ``offset_j = K_0 + ... + K_{j-1}``; for high-low, columns
``0..S-1`` are the Hadamard part and ``S + i`` reports the i-th non-sensitive
symbol itself (the paper's ``x + S - s``).

Sampling never loops over users: a user draws ``y`` uniform in ``[K]`` and, if
the parity of ``popcount(row & y)`` disagrees with the coin "report inside
``S_x``" (probability ``e^eps / (e^eps + 1)`` = ``|S_x|`` times the level
``2 e^eps / (K (e^eps + 1))``), flips the lowest set bit of the row in ``y`` — a
bijection between ``S_x`` and its complement, so the result is uniform on the
chosen half. Estimation costs ``O(n + sum_j K_j log K_j)``: a histogram, then one
fast Walsh–Hadamard transform per group of equal-size blocks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction

import numpy as np

import designer.theory as theory
from designer.mechanisms.base import Level, Mechanism, RatioCheck, StructureCheck, rows_to_channel_array
from designer.spec import PrivacyMatrix, block_partition
from solvers.hadamard import fwht, hadamard_sign, next_power_of_two_above

#: ``inf`` as an exact privacy level (no constraint).
UNCONSTRAINED = "inf"


class BlockHadamardResponse(Mechanism):
    """HR inside each block: (Pi, epsilon)-block-structured LDP (Section 6.1).

    Channel: for ``x`` in block ``j`` and output ``(j, y)``::

        Q((j, y) | x) = 2 e^eps / (K_j (1 + e^eps))  if y in S_x,
                        2       / (K_j (1 + e^eps))  if y not in S_x,
        Q((j', y) | x) = 0                            for j' != j.

    Privacy guarantee: epsilon-LDP between symbols of the same block (ratio of
    the two levels is exactly ``e^eps``), no constraint across blocks (disjoint
    outputs) — i.e. E-LDP for ``E = PrivacyMatrix.block(partition, epsilon)``.

    Parameters
    ----------
    partition : list of block sizes (consecutive blocks) or list of blocks (lists
        of symbols covering ``0..k-1`` exactly once; inside a block, symbols take
        Hadamard rows 1, 2, ... in increasing symbol order)
    epsilon : float or exact text (``"log(3)"`` gives an exactly rational channel)
    """

    name = "block HR"

    def __init__(self, partition: Sequence[int] | Sequence[Sequence[int]], epsilon: Level):
        blocks = block_partition(partition)
        self.blocks = [np.asarray(block, dtype=np.int64) for block in blocks]
        self.block_sizes = np.array([block.size for block in self.blocks], dtype=np.int64)
        self.hadamard_sizes = np.array([next_power_of_two_above(size) for size in self.block_sizes], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.hadamard_sizes)[:-1]]).astype(np.int64)
        k = int(self.block_sizes.sum())
        super().__init__(k, int(self.hadamard_sizes.sum()), epsilon)
        self.block_of = np.empty(k, dtype=np.int64)
        self.row_of = np.empty(k, dtype=np.int64)
        for j, block in enumerate(self.blocks):
            self.block_of[block] = j
            self.row_of[block] = np.arange(1, block.size + 1)
        self._symbol_size = self.hadamard_sizes[self.block_of]
        self._symbol_offset = self.offsets[self.block_of]
        self._symbol_flip = self.row_of & -self.row_of
        self._groups = _size_groups(self.hadamard_sizes, self.blocks, self.block_of, self.row_of)
        e = math.exp(self.epsilon)
        self._inside = e / (e + 1.0)
        self._scale = (e + 1.0) / (e - 1.0) if self.epsilon > 0 else math.inf

    # ----------------------------------------------------------------- privacy
    def _build_privacy(self) -> PrivacyMatrix:
        values = np.full((self.k, self.k), UNCONSTRAINED, dtype=object)
        for block in self.blocks:
            values[np.ix_(block, block)] = self.exact_epsilon
        np.fill_diagonal(values, 0)
        return PrivacyMatrix(values, name=f"block {self.epsilon_text}-LDP, {len(self.blocks)} blocks, k={self.k}")

    def check_privacy_structure(self) -> StructureCheck:
        checks = []
        for size in sorted(set(self.hadamard_sizes.tolist())):
            high, low = _levels(self.epsilon, size)
            checks.append(
                RatioCheck(
                    f"same block, K={size}: Q(y|x)/Q(y|x') <= (2e^eps/(K(1+e^eps))) / (2/(K(1+e^eps)))",
                    math.log(high / low),
                    self.epsilon,
                )
            )
        if len(self.blocks) > 1:
            checks.append(RatioCheck("different blocks: disjoint outputs, ratio unbounded", math.inf, math.inf))
        return StructureCheck(f"{self.name} (eps={self.epsilon_text})", tuple(checks))

    def _channel_rows(self) -> np.ndarray:
        e = self._exp_epsilon()
        one = Fraction(1) if isinstance(e, Fraction) else 1.0
        rows = np.full((self.k, self.n_outputs), one * 0, dtype=object)
        for x in range(self.k):
            size, offset, row = int(self._symbol_size[x]), int(self._symbol_offset[x]), int(self.row_of[x])
            signs = hadamard_sign(row, np.arange(size))
            high, low = 2 * e / (size * (1 + e)), 2 * one / (size * (1 + e))
            rows[x, offset : offset + size] = [high if s > 0 else low for s in signs]
        return rows_to_channel_array(rows)

    # ------------------------------------------------------------------ client
    def _sample_chunk(self, inputs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        size = self._symbol_size[inputs]
        row = self.row_of[inputs]
        column = _hadamard_half(row, size, rng.random(inputs.size) < self._inside, rng)
        column += self._symbol_offset[inputs]
        return column

    # ------------------------------------------------------------------ server
    def _estimate_raw(self, counts: np.ndarray) -> np.ndarray:
        """Estimator (19): ``p_x = 2 (e^eps+1)/(e^eps-1) (p(S_x) - p(X_j)/2)``.

        With ``N_j`` reports in block j and ``h = H_{K_j} @ counts_j`` (FWHT),
        ``n p(S_x) = (N_j + h[row_x]) / 2`` and ``n p(X_j) = N_j``.
        """
        n = float(counts.sum())
        estimate = np.empty(self.k)
        for group in self._groups:
            block_counts = counts[group.columns]
            transformed = fwht(block_counts)
            in_block = block_counts.sum(axis=1)
            in_set = (in_block[group.position] + transformed[group.position, group.rows]) / (2.0 * n)
            estimate[group.symbols] = 2.0 * self._scale * (in_set - in_block[group.position] / (2.0 * n))
        return estimate

    def forward(self, prior) -> np.ndarray:
        prior = np.asarray(prior, dtype=float)
        e = math.exp(self.epsilon)
        output = np.empty(self.n_outputs)
        for group in self._groups:
            placed = np.zeros(group.columns.shape)
            placed[group.position, group.rows] = prior[group.symbols]
            mass = placed.sum(axis=1, keepdims=True)
            output[group.columns] = ((e + 1) * mass + (e - 1) * fwht(placed)) / (group.size * (1 + e))
        return output

    def adjoint(self, weights) -> np.ndarray:
        weights = np.asarray(weights, dtype=float)
        e = math.exp(self.epsilon)
        result = np.empty(self.k)
        for group in self._groups:
            gathered = weights[group.columns]
            total = gathered.sum(axis=1)[group.position]
            transformed = fwht(gathered)[group.position, group.rows]
            result[group.symbols] = ((e + 1) * total + (e - 1) * transformed) / (group.size * (1 + e))
        return result

    # ------------------------------------------------------------------ theory
    def tv_bound(self, n: int) -> float:
        """Bound (20) on ``E[d_TV]``: ``2 (e^eps+1)/(e^eps-1) sqrt(3 sum_j k_j^2 / n)``."""
        return theory.block_tv_bound(self.block_sizes, self.epsilon, n)

    def l2_bound(self, n: int) -> float:
        """Bound (20) on ``E[l2^2]``: ``12 max_j k_j / n ((e^eps+1)/(e^eps-1))^2``."""
        return theory.block_l2_squared_bound(self.block_sizes, self.epsilon, n)


class HadamardResponse(BlockHadamardResponse):
    """Hadamard response for classic epsilon-LDP (ref. [23]; the paper's LDP baseline).

    The block scheme with one block: ``K = 2 ** ceil(log2(k + 1))`` outputs,
    ``Q(y|x) = 2 e^eps / (K (1+e^eps))`` on ``S_x``, ``2 / (K (1+e^eps))`` off it.
    Privacy guarantee: epsilon-LDP (Definition 1), tight.
    """

    name = "HR"

    def __init__(self, k: int, epsilon: Level):
        super().__init__([int(k)], epsilon)

    def _build_privacy(self) -> PrivacyMatrix:
        values = np.full((self.k, self.k), self.exact_epsilon, dtype=object)
        np.fill_diagonal(values, 0)
        return PrivacyMatrix(values, name=f"{self.epsilon_text}-LDP on {self.k} symbols")


class HighLowHadamardResponse(Mechanism):
    """The high-low HR scheme of Section 5.1: channel (13)–(14).

    With ``s = |A|`` sensitive symbols, ``S = 2 ** ceil(log2(s + 1))``, ``t = k - s``:
    a sensitive symbol answers HR on ``[S]`` (levels ``2e^eps/(S(e^eps+1))`` on
    ``S_x``, ``2/(S(e^eps+1))`` off it); a non-sensitive symbol answers uniformly on
    ``[S]`` (level ``2/(S(e^eps+1))`` each) or, with probability
    ``(e^eps-1)/(e^eps+1)``, reports itself (output ``S + i`` for the i-th
    non-sensitive symbol).

    Privacy guarantee: (A, epsilon)-high-low LDP (Definition 3), i.e. E-LDP for
    ``E = PrivacyMatrix.high_low(k, A, epsilon)``: a sensitive x is within
    ``e^eps`` of every x' on ``[S]`` and has zero mass elsewhere.

    Parameters
    ----------
    k : domain size
    sensitive : int s (the first s symbols, as in the paper) or an iterable of symbols
    epsilon : float or exact text
    """

    name = "high-low HR"

    def __init__(self, k: int, sensitive: int | Iterable[int], epsilon: Level):
        k = int(k)
        if isinstance(sensitive, (int, np.integer)):
            if not 1 <= sensitive <= k:
                raise ValueError(f"the number of sensitive symbols must be in 1..{k}, got {sensitive}")
            chosen = np.arange(int(sensitive))
        else:
            chosen = np.unique(np.asarray(list(sensitive), dtype=np.int64))
            if chosen.size == 0 or chosen[0] < 0 or chosen[-1] >= k:
                raise ValueError(f"sensitive symbols must be a non-empty subset of 0..{k - 1}")
        self.sensitive = chosen
        self.s = int(chosen.size)
        self.t = k - self.s
        self.hadamard_size = next_power_of_two_above(self.s)
        super().__init__(k, self.hadamard_size + self.t, epsilon)
        is_sensitive = np.zeros(k, dtype=bool)
        is_sensitive[chosen] = True
        self.is_sensitive = is_sensitive
        self.others = np.flatnonzero(~is_sensitive)
        self.row_of = np.zeros(k, dtype=np.int64)
        self.row_of[chosen] = np.arange(1, self.s + 1)
        self.own_output = np.full(k, -1, dtype=np.int64)
        self.own_output[self.others] = self.hadamard_size + np.arange(self.t)
        e = math.exp(self.epsilon)
        self._inside = e / (e + 1.0)
        self._keep = (e - 1.0) / (e + 1.0)
        self._scale = (e + 1.0) / (e - 1.0) if self.epsilon > 0 else math.inf

    def _build_privacy(self) -> PrivacyMatrix:
        values = np.full((self.k, self.k), UNCONSTRAINED, dtype=object)
        values[self.sensitive, :] = self.exact_epsilon
        np.fill_diagonal(values, 0)
        return PrivacyMatrix(values, name=f"high-low {self.epsilon_text}-LDP, {self.s} sensitive of {self.k}")

    def check_privacy_structure(self) -> StructureCheck:
        high, low = _levels(self.epsilon, self.hadamard_size)
        checks = (
            RatioCheck(
                "x in A, y in [S]: Q(y|x) <= 2e^eps/(S(e^eps+1)), Q(y|x') >= 2/(S(e^eps+1)) for every x'",
                math.log(high / low),
                self.epsilon,
            ),
            RatioCheck("x in A, y outside [S]: Q(y|x) = 0", -math.inf, self.epsilon),
            RatioCheck("x not in A: E[x, x'] = inf, no constraint", math.inf, math.inf),
        )
        return StructureCheck(f"{self.name} (eps={self.epsilon_text}, s={self.s})", checks)

    def _channel_rows(self) -> np.ndarray:
        e = self._exp_epsilon()
        one = Fraction(1) if isinstance(e, Fraction) else 1.0
        size = self.hadamard_size
        high, low = 2 * e / (size * (e + 1)), 2 * one / (size * (e + 1))
        rows = np.full((self.k, self.n_outputs), one * 0, dtype=object)
        for x in range(self.k):
            if self.is_sensitive[x]:
                signs = hadamard_sign(int(self.row_of[x]), np.arange(size))
                rows[x, :size] = [high if sign > 0 else low for sign in signs]  # eq. (13)
            else:
                rows[x, :size] = low  # eq. (14)
                rows[x, self.own_output[x]] = (e - 1) / (e + 1)
        return rows_to_channel_array(rows)

    def _sample_chunk(self, inputs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        coin = rng.random(inputs.size)
        sensitive = self.is_sensitive[inputs]
        # Sensitive: HR on [S]. Non-sensitive: the Hadamard part is uniform, so any
        # row works; row 0 (all +1) with "inside" = True keeps the uniform draw.
        inside = np.where(sensitive, coin < self._inside, True)
        size = np.full(inputs.size, self.hadamard_size, dtype=np.int64)
        column = _hadamard_half(self.row_of[inputs], size, inside, rng)
        keep = ~sensitive & (coin < self._keep)
        column[keep] = self.own_output[inputs[keep]]
        return column

    def _estimate_raw(self, counts: np.ndarray) -> np.ndarray:
        """Estimators (15) for x in A and (16) for x not in A.

        ``n p(S_i) = (N_S + h[row_i]) / 2`` with ``h = H_S @ counts[:S]`` (FWHT) and
        ``N_S`` the number of reports in ``[S]``.
        """
        n = float(counts.sum())
        size = self.hadamard_size
        hadamard_counts = counts[:size]
        in_hadamard = float(hadamard_counts.sum())
        transformed = fwht(hadamard_counts)
        e = math.exp(self.epsilon)
        p_a = self._scale * (in_hadamard / n - 2.0 / (e + 1.0))
        p_s = (in_hadamard + transformed[self.row_of[self.sensitive]]) / (2.0 * n)
        estimate = np.empty(self.k)
        estimate[self.sensitive] = 2.0 * self._scale * (p_s - 1.0 / (e + 1.0)) - p_a  # (15)
        estimate[self.others] = self._scale * counts[self.own_output[self.others]] / n  # (16)
        return estimate

    def forward(self, prior) -> np.ndarray:
        prior = np.asarray(prior, dtype=float)
        e = math.exp(self.epsilon)
        size = self.hadamard_size
        placed = np.zeros(size)
        placed[self.row_of[self.sensitive]] = prior[self.sensitive]
        mass_a, mass_other = placed.sum(), prior[self.others].sum()
        output = np.empty(self.n_outputs)
        output[:size] = ((e + 1) * mass_a + (e - 1) * fwht(placed) + 2 * mass_other) / (size * (e + 1))
        output[size:] = prior[self.others] * (e - 1) / (e + 1)
        return output

    def adjoint(self, weights) -> np.ndarray:
        weights = np.asarray(weights, dtype=float)
        e = math.exp(self.epsilon)
        size = self.hadamard_size
        head = weights[:size]
        total = head.sum()
        result = np.empty(self.k)
        transformed = fwht(head)[self.row_of[self.sensitive]]
        result[self.sensitive] = ((e + 1) * total + (e - 1) * transformed) / (size * (e + 1))
        result[self.others] = 2 * total / (size * (e + 1)) + (e - 1) / (e + 1) * weights[size:]
        return result

    def tv_bound(self, n: int) -> float:
        """Bound (17) on ``E[d_TV]`` (see :func:`designer.theory.high_low_tv_bound`)."""
        return theory.high_low_tv_bound(self.k, self.s, self.epsilon, n)


class _SizeGroup:
    """Blocks sharing one Hadamard size: gathered as a (blocks x K) matrix for one batched FWHT."""

    def __init__(
        self,
        size: int,
        block_ids: np.ndarray,
        offsets: np.ndarray,
        symbols: np.ndarray,
        position: np.ndarray,
        rows: np.ndarray,
    ):
        self.size = size
        self.columns = offsets[block_ids][:, None] + np.arange(size)[None, :]
        self.symbols = symbols
        self.position = position
        self.rows = rows


def _size_groups(sizes: np.ndarray, blocks: list[np.ndarray], block_of: np.ndarray, row_of: np.ndarray):
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    groups = []
    for size in np.unique(sizes):
        block_ids = np.flatnonzero(sizes == size)
        symbols = np.concatenate([blocks[j] for j in block_ids])
        rank = np.empty(sizes.size, dtype=np.int64)
        rank[block_ids] = np.arange(block_ids.size)
        groups.append(_SizeGroup(int(size), block_ids, offsets, symbols, rank[block_of[symbols]], row_of[symbols]))
    return groups


def _levels(epsilon: float, size: int) -> tuple[float, float]:
    """The two probability levels of HR on ``size`` columns."""
    e = math.exp(epsilon)
    return 2 * e / (size * (1 + e)), 2 / (size * (1 + e))


def _hadamard_half(row: np.ndarray, size: np.ndarray, inside: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniform column in ``[size)`` with ``H[row, column] = +1`` where ``inside``, ``-1`` elsewhere.

    ``row`` must be >= 1 wherever the sign matters (row 0 has no -1 entries).
    """
    column = (rng.random(row.size) * size).astype(np.int64)
    plus = (np.bitwise_count(row & column) & 1) == 0
    column ^= np.where(plus != inside, row & -row, 0)
    return column
