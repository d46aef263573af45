"""The common interface of deployable mechanisms (client sampler, server estimator).

Every mechanism states its privacy guarantee next to its code:

* :attr:`Mechanism.privacy` — the E matrix it satisfies (built only for small k);
* :meth:`Mechanism.check_privacy_structure` — a short proof-like check: the
  distinct probability levels the sampler uses, the log-ratios between them that
  the E-LDP inequalities (Definition 2, eq. 4) compare, and the level each is
  allowed; valid at any k, because it never builds the k x K channel;
* :meth:`Mechanism.certify` — the certifier run on the materialised channel
  (small k), exact when the privacy level is given as ``"log(r)"``.

Client side: :meth:`Mechanism.sample` turns true values into reports (integer
output indices, ``ceil(log2 n_outputs)`` bits each), vectorised and chunked.
Server side: :meth:`Mechanism.estimate` turns reports into an estimate of the
input distribution; :meth:`Mechanism.forward` and :meth:`Mechanism.adjoint`
apply the channel as a linear operator so the generic estimators of
:mod:`designer.estimation` (EM) run without materialising it.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from designer.certify import Certificate, certify
from designer.channel import Channel
from designer.exact import ExactEpsilon
from designer.mechanisms.binary import exp_of_level
from designer.spec import PrivacyMatrix
from solvers.hadamard import project_onto_simplex

#: Largest domain for which ``privacy`` and ``channel()`` are materialised (a k x k E
#: matrix of exact entries costs ~k^2 Python objects).
MAX_MATERIALISED_K = 2048
#: Users privatised per vectorised chunk (bounds the temporaries to a few tens of MB).
CHUNK_USERS = 1 << 20
#: A structural log-ratio is accepted when it is within this absolute slack of its
#: allowed level (float rounding of ``log(e^eps)``; the exact proof is :meth:`certify`).
STRUCTURE_TOLERANCE = 1e-12

Level = float | str | ExactEpsilon


@dataclass(frozen=True)
class RatioCheck:
    """One step of a structural privacy proof: ``log_ratio <= allowed``."""

    statement: str
    log_ratio: float
    allowed: float

    @property
    def holds(self) -> bool:
        return self.allowed == math.inf or self.log_ratio <= self.allowed + STRUCTURE_TOLERANCE


@dataclass(frozen=True)
class StructureCheck:
    """The proof-like privacy check of a mechanism: every ratio it uses, with its allowance."""

    mechanism: str
    checks: tuple[RatioCheck, ...]

    @property
    def holds(self) -> bool:
        return all(check.holds for check in self.checks)

    def __str__(self) -> str:
        lines = [f"{self.mechanism}: {'holds' if self.holds else 'FAILS'}"]
        for check in self.checks:
            mark = "ok " if check.holds else "BAD"
            lines.append(f"  [{mark}] {check.statement}: {check.log_ratio:.12g} <= {check.allowed:.12g}")
        return "\n".join(lines)


class Mechanism(ABC):
    """A deployable LDP mechanism on inputs ``0..k-1`` and outputs ``0..n_outputs-1``."""

    name: str = "mechanism"

    def __init__(self, k: int, n_outputs: int, epsilon: Level | None):
        self.k = int(k)
        self.n_outputs = int(n_outputs)
        if epsilon is None:  # the E matrix is given entry by entry (see ChannelMechanism)
            self.exact_epsilon, self.epsilon = None, None
        else:
            self.exact_epsilon = ExactEpsilon.parse(epsilon)
            self.epsilon = float(self.exact_epsilon)
            if not 0 < self.epsilon < math.inf:
                raise ValueError(f"epsilon must be positive and finite, got {epsilon}")
        self._privacy: PrivacyMatrix | None = None

    # ------------------------------------------------------------------ privacy
    @property
    def privacy(self) -> PrivacyMatrix:
        """The E matrix this mechanism satisfies (k <= :data:`MAX_MATERIALISED_K`)."""
        if self._privacy is None:
            _check_small(self.k, "privacy")
            self._privacy = self._build_privacy()
        return self._privacy

    @abstractmethod
    def _build_privacy(self) -> PrivacyMatrix: ...

    @abstractmethod
    def check_privacy_structure(self) -> StructureCheck:
        """Every likelihood ratio the mechanism uses, against the E entry that bounds it."""

    def channel(self) -> Channel:
        """The materialised channel ``Q[x, y]`` (k <= :data:`MAX_MATERIALISED_K`)."""
        _check_small(self.k, "channel()")
        return Channel(self._channel_rows())

    @abstractmethod
    def _channel_rows(self) -> np.ndarray: ...

    def certify(self, exact: bool = False) -> Certificate:
        """Run :func:`designer.certify.certify` on the materialised channel against :attr:`privacy`."""
        return certify(self.channel(), self.privacy, exact=exact)

    # ------------------------------------------------------------------ client
    def sample(self, inputs, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Privatise every input: one report (an output index) per user, vectorised, chunked.

        Parameters
        ----------
        inputs : array_like of int in ``0..k-1``
        rng : numpy Generator or seed

        Returns
        -------
        ndarray of int64, same shape as ``inputs``.
        """
        values = self.validate_inputs(inputs)
        rng = np.random.default_rng(rng)
        flat = values.ravel()
        reports = np.empty(flat.shape, dtype=np.int64)
        for start in range(0, flat.size, CHUNK_USERS):
            stop = min(start + CHUNK_USERS, flat.size)
            reports[start:stop] = self._sample_chunk(flat[start:stop], rng)
        return reports.reshape(values.shape)

    @abstractmethod
    def _sample_chunk(self, inputs: np.ndarray, rng: np.random.Generator) -> np.ndarray: ...

    @property
    def bits(self) -> int:
        """Communication per user: ``ceil(log2 n_outputs)`` bits."""
        return max(1, math.ceil(math.log2(self.n_outputs)))

    # ------------------------------------------------------------------ server
    def counts(self, reports) -> np.ndarray:
        """Histogram of reports over ``0..n_outputs-1`` (validated)."""
        values = np.asarray(reports)
        if values.size and (
            not np.issubdtype(values.dtype, np.integer) or values.min() < 0 or values.max() >= self.n_outputs
        ):
            raise ValueError(f"reports must be integers in 0..{self.n_outputs - 1}")
        return np.bincount(values.ravel(), minlength=self.n_outputs)

    def estimate(self, reports, project: bool = False) -> np.ndarray:
        """Estimate the input distribution from reports (see :meth:`estimate_counts`)."""
        return self.estimate_counts(self.counts(reports), project=project)

    def estimate_counts(self, counts, project: bool = False) -> np.ndarray:
        """The mechanism's unbiased estimate from output counts; ``project=True`` projects
        it onto the probability simplex (Euclidean projection; biased, never worse in l2)."""
        counts = np.asarray(counts)
        if counts.shape != (self.n_outputs,):
            raise ValueError(f"expected {self.n_outputs} output counts, got shape {counts.shape}")
        if counts.sum() <= 0:
            raise ValueError("no reports to estimate from")
        raw = self._estimate_raw(counts)
        return project_onto_simplex(raw) if project else raw

    @abstractmethod
    def _estimate_raw(self, counts: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def forward(self, prior) -> np.ndarray:
        """Output distribution ``prior @ Q`` (length ``n_outputs``)."""

    @abstractmethod
    def adjoint(self, weights) -> np.ndarray:
        """``Q @ weights`` for a vector over outputs (length ``k``)."""

    # ------------------------------------------------------------------ theory
    def tv_bound(self, n: int) -> float | None:
        """The paper's bound on ``E[d_TV(p_hat, p)]`` after ``n`` reports, if it states one."""
        return None

    def validate_inputs(self, inputs) -> np.ndarray:
        values = np.asarray(inputs)
        if values.size and (
            not np.issubdtype(values.dtype, np.integer) or values.min() < 0 or values.max() >= self.k
        ):
            raise ValueError(f"inputs must be integers in 0..{self.k - 1}")
        return values.astype(np.int64, copy=False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(k={self.k}, outputs={self.n_outputs}, epsilon={self.epsilon_text})"

    @property
    def epsilon_text(self) -> str:
        """The privacy level as written: ``log(3)`` when exact, else the float (``1``, ``0.7``)."""
        if self.exact_epsilon is None:
            return "per-pair E"
        if self.exact_epsilon.exp_value is not None:
            return str(self.exact_epsilon)
        return f"{self.epsilon:g}"

    # -------------------------------------------------------------- helpers
    def _exp_epsilon(self):
        """``exp(epsilon)``: a Fraction when the level is ``log(rational)``, else a float."""
        return exp_of_level(self.exact_epsilon, sign=+1)


def rows_to_channel_array(rows) -> np.ndarray:
    """A 2-D object array of Fractions if any entry is a Fraction, else float64."""
    array = np.asarray(rows, dtype=object)
    if any(isinstance(v, Fraction) for v in array.ravel()):
        return array
    return array.astype(float)


def _check_small(k: int, what: str) -> None:
    if k > MAX_MATERIALISED_K:
        raise ValueError(
            f"{what} is only materialised for k <= {MAX_MATERIALISED_K} (k = {k}); "
            "use check_privacy_structure() and the operator methods at scale"
        )
