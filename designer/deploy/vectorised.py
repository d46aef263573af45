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
"""

from __future__ import annotations

import secrets

import numpy as np

from designer.deploy.sampler import TableSampler

#: Words drawn per call, bounding memory for large n.
CHUNK = 1 << 22


class VectorisedSampler:
    """Exact vectorised sampling of a checked package (see the module docstring).

    Parameters
    ----------
    document : dict
        A parsed package (structure and SHA-256 are checked).
    seed : int, optional
        Use numpy's PCG64 with this seed (reproducible, not cryptographic)
        instead of ChaCha20 keyed from :mod:`secrets`.
    """

    def __init__(self, document: dict, seed: int | None = None):
        checked = TableSampler(document)
        self.bits = checked.bits
        self.inputs, self.outputs = checked.inputs, checked.outputs
        k, m = len(checked.thresholds), len(self.outputs)
        self.seed = seed
        if seed is None:
            from randomgen import ChaCha

            self.bit_generator = ChaCha(key=secrets.randbits(256), counter=0, rounds=20)
            self.generator_name = "ChaCha20 (randomgen), 256-bit key from secrets: cryptographic"
        else:
            self.bit_generator = np.random.PCG64(seed)
            self.generator_name = f"PCG64 (numpy) seeded with {seed}: reproducible simulation, NOT cryptographic"
        self._m = m
        # c_{m-1} = 2^b exceeds every u; stored as 2^64 - 1 when b = 64 (the search never steps past m - 1)
        rows = checked.thresholds
        if self.bits == 64:
            rows = [row[:-1] + [(1 << 64) - 1] for row in rows]
        self._thresholds = np.array(rows, dtype=np.uint64).reshape(k, m).ravel()
        self._guide_bits = min(self.bits, max(1, (2 * m - 1).bit_length()))
        self._shift = np.uint64(self.bits - self._guide_bits)
        starts = np.arange(1 << self._guide_bits, dtype=np.uint64) << self._shift
        self._guide = np.stack([
            np.searchsorted(self._thresholds[x * m : (x + 1) * m], starts, side="right") for x in range(k)
        ]).astype(np.int64).ravel()

    def uniform_integers(self, n: int) -> np.ndarray:
        """``n`` independent uniform integers in ``[0, 2^b)`` as uint64."""
        out = np.empty(n, dtype=np.uint64)
        for start in range(0, n, CHUNK * 2 if self.bits <= 32 else CHUNK):
            size = min(n - start, CHUNK * 2 if self.bits <= 32 else CHUNK)
            if self.bits <= 32:
                halves = self.bit_generator.random_raw((size + 1) // 2).view(np.uint32)[:size]
                out[start : start + size] = halves >> np.uint32(32 - self.bits)
            else:
                out[start : start + size] = self.bit_generator.random_raw(size) >> np.uint64(64 - self.bits)
        return out

    def sample(self, inputs) -> np.ndarray:
        """One report (output index) per input index: ``P(Y = y | X = x) = T[x, y] / 2^b`` exactly."""
        inputs = np.asarray(inputs)
        if inputs.size and (
            not np.issubdtype(inputs.dtype, np.integer) or inputs.min() < 0 or inputs.max() >= len(self.inputs)
        ):
            raise ValueError(f"inputs must be integers in 0..{len(self.inputs) - 1}")
        flat = inputs.ravel().astype(np.int64)
        uniform = self.uniform_integers(flat.size)
        reports = self._guide[(flat << self._guide_bits) + (uniform >> self._shift).astype(np.int64)]
        base = flat * self._m
        last = self._m - 1
        pending = np.flatnonzero((reports < last) & (self._thresholds[base + reports] <= uniform))
        while pending.size:
            reports[pending] += 1
            stepped = reports[pending]
            pending = pending[(stepped < last) & (self._thresholds[base[pending] + stepped] <= uniform[pending])]
        return reports.reshape(inputs.shape)

    def counts(self, x: int, n: int) -> np.ndarray:
        """How often each output is reported in ``n`` draws for input index ``x``."""
        return np.bincount(self.sample(np.full(n, x, dtype=np.int64)), minlength=len(self.outputs))
