"""Features of reports of any shape, for the learned attacks (:mod:`designer.audit.attacks`).

A :class:`FeatureMap` is built on the pooled training reports and maps every
report to a row of numbers:

* **categories** — a scalar or a coordinate with at most :data:`MAX_CATEGORIES`
  distinct training values (text, small integers): one column per value
  (one-hot; a 0/1 coordinate is its own column);
* **bit vectors** — the 0/1 coordinates, their Hamming weight and, when there
  are at most :data:`MAX_INTERACTION_BITS` of them, every pairwise product
  (``bit i and bit j``);
* **numeric fields** — a coordinate with many distinct non-integer values: the
  value itself;
* **integer fields** — a coordinate with many distinct integer values (a seed,
  a hash): the value and its **binary digits** (the 64 low bits, those that
  vary in training), so that a field hiding the input in some of its bits is
  visible to a linear model;
* **user features** — ``--features module:function``, ``f(reports, **args)``
  returning one row of numbers per report, appended to the rest.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from designer.audit.usercode import call_user

#: A scalar or coordinate with at most this many distinct training values is one-hot encoded.
MAX_CATEGORIES = 32
#: Text reports: one-hot over at most this many most frequent training values (the rest: one column).
MAX_TEXT_CATEGORIES = 256
#: Pairwise products of bits are added when there are at most this many 0/1 coordinates.
MAX_INTERACTION_BITS = 24
#: Binary digits taken from an integer field (the low ones).
INTEGER_DIGITS = 64


class FeatureMap:
    """Reports -> rows of features, built on training reports (see the module docstring)."""

    def __init__(self, train_reports: list[np.ndarray], user: Callable | None = None, user_arguments: dict | None = None):
        pooled = np.concatenate(train_reports)
        self.user = user
        self.user_arguments = dict(user_arguments or {})
        self.text = pooled.dtype == object and pooled.ndim == 1
        self.columns: list[tuple[str, int, object]] = []  # (kind, coordinate, parameters)
        if self.text:
            values, counts = np.unique(pooled.astype(str), return_counts=True)
            self.columns.append(("text", 0, values[np.argsort(-counts, kind="stable")][:MAX_TEXT_CATEGORIES]))
            self.bits = []
            return
        matrix = _as_matrix(pooled)
        self.dimension = matrix.shape[1]
        self.bits = []
        for j in range(self.dimension):
            column = matrix[:, j]
            distinct = np.unique(column)
            if distinct.size <= 2 and set(distinct.tolist()) <= {0, 1}:
                self.bits.append(j)
            elif distinct.size <= MAX_CATEGORIES:
                self.columns.append(("category", j, distinct))
            elif column.dtype.kind in "iu" or np.all(column == np.round(column)):
                varying = _varying_digits(column)
                self.columns.append(("integer", j, (varying, float(column.mean()), float(column.std()) or 1.0)))
            else:
                self.columns.append(("number", j, (float(column.mean()), float(column.std()) or 1.0)))

    def transform(self, reports: np.ndarray) -> np.ndarray:
        """One row of features (float32) per report."""
        if self.text:
            return self._text(reports)
        matrix = _as_matrix(reports)
        parts = []
        if self.bits:
            bits = matrix[:, self.bits].astype(np.float32)
            parts += [bits, bits.sum(axis=1, keepdims=True)]
            if 2 <= len(self.bits) <= MAX_INTERACTION_BITS:
                first, second = np.triu_indices(len(self.bits), 1)
                parts.append(bits[:, first] * bits[:, second])
        for kind, j, parameters in self.columns:
            column = matrix[:, j]
            if kind == "category":
                parts.append((column[:, None] == parameters[None, :]).astype(np.float32))
            elif kind == "integer":
                digits, mean, scale = parameters
                parts.append(((column - mean) / scale)[:, None].astype(np.float32))
                if digits.size:
                    unsigned = _low_bits(column)
                    parts.append(((unsigned[:, None] >> digits.astype(np.uint64)[None, :]) & np.uint64(1)).astype(np.float32))
            else:
                mean, scale = parameters
                parts.append(((column - mean) / scale)[:, None].astype(np.float32))
        return self._with_user(reports, parts)

    def _text(self, reports: np.ndarray) -> np.ndarray:
        values = self.columns[0][2]
        text = np.asarray(reports).astype(str)
        one_hot = (text[:, None] == values[None, :]).astype(np.float32)
        other = (one_hot.sum(axis=1, keepdims=True) == 0).astype(np.float32)
        return self._with_user(reports, [one_hot, other])

    def _with_user(self, reports: np.ndarray, parts: list[np.ndarray]) -> np.ndarray:
        if self.user is not None:
            raw = call_user(self.user, "the features function", reports, **self.user_arguments)
            extra = np.asarray(raw, dtype=float)
            if extra.ndim == 1:
                extra = extra[:, None]
            if extra.ndim != 2 or extra.shape[0] != len(reports):
                raise ValueError(
                    f"the features function returned shape {extra.shape} for {len(reports)} reports, "
                    f"expected ({len(reports)}, f)"
                )
            if not np.all(np.isfinite(extra)):
                raise ValueError("the features function returned NaN or infinite values")
            parts.append(extra.astype(np.float32))
        if not parts:
            return np.zeros((len(reports), 1), dtype=np.float32)
        return np.concatenate(parts, axis=1)


def _as_matrix(reports: np.ndarray) -> np.ndarray:
    """Numeric reports as a 2-D array, integers kept as integers (their low bits matter)."""
    array = np.asarray(reports)
    if array.dtype == object:  # Python integers beyond 64 bits: their low 64 bits
        array = np.vectorize(lambda value: int(value) % 2**64, otypes=[np.uint64])(array)
    if array.dtype.kind == "b":
        array = array.astype(np.int8)
    return array.reshape(len(array), -1)


def _low_bits(column: np.ndarray) -> np.ndarray:
    """The low 64 bits of integer values (negative values in two's complement)."""
    if column.dtype.kind == "u":
        return column.astype(np.uint64)
    if column.dtype.kind == "f":
        column = np.clip(column, -(2.0**63), 2.0**63 - 1024)
    return column.astype(np.int64).view(np.uint64)


def _varying_digits(column: np.ndarray) -> np.ndarray:
    """The binary digits (of the low :data:`INTEGER_DIGITS`) that are not constant in training."""
    unsigned = _low_bits(column)
    digits = np.arange(INTEGER_DIGITS, dtype=np.uint64)
    values = (unsigned[:, None] >> digits[None, :]) & np.uint64(1)
    return np.flatnonzero(values.min(axis=0) != values.max(axis=0))
