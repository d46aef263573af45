"""The randomised-response family as deployable mechanisms.

* :class:`GeneralizedRandomizedResponse` — k-ary randomised response (GRR):
  ``Q(x|x) = e^eps / (e^eps + k - 1)``, ``Q(y|x) = 1 / (e^eps + k - 1)`` for y != x.
  Privacy guarantee: epsilon-LDP (Definition 1), tight (the only ratio above 1 is
  ``Q(x|x)/Q(x|x') = e^eps``). Vectorised sampler, closed-form unbiased estimator
  ``p_hat_x = (q_hat_x - b) / (a - b)`` with ``a = Q(x|x)``, ``b = Q(y|x)``.
* :class:`ChannelMechanism` — any :class:`~designer.channel.Channel` with the E it
  satisfies (a channel from the design engine, or the binary schemes below):
  sampler :meth:`Channel.sample`, estimator the unbiased least-squares inverse of
  :mod:`designer.estimation`.
* :func:`warner_response` (eq. 10), :func:`mangat_response` (eq. 11),
  :func:`binary_optimal_response` (Q* of Theorem 2, eq. 9) — the channels of
  :mod:`designer.mechanisms.binary` wrapped as mechanisms.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from designer.channel import Channel
from designer.estimation import unbiased_estimate
from designer.mechanisms.base import Level, Mechanism, RatioCheck, StructureCheck, rows_to_channel_array
from designer.mechanisms.binary import binary_optimal, binary_privacy, mangat, warner
from designer.spec import PrivacyMatrix


class GeneralizedRandomizedResponse(Mechanism):
    """k-ary randomised response; epsilon-LDP (see module docstring).

    Parameters
    ----------
    k : int >= 2
    epsilon : float or exact text (``"log(3)"`` gives an exactly rational channel)
    """

    name = "GRR"

    def __init__(self, k: int, epsilon: Level):
        if int(k) < 2:
            raise ValueError(f"GRR needs k >= 2, got {k}")
        super().__init__(int(k), int(k), epsilon)
        e = math.exp(self.epsilon)
        self._keep = e / (e + self.k - 1)
        self._other = 1.0 / (e + self.k - 1)

    def _build_privacy(self) -> PrivacyMatrix:
        values = np.full((self.k, self.k), self.exact_epsilon, dtype=object)
        np.fill_diagonal(values, 0)
        return PrivacyMatrix(values, name=f"{self.epsilon_text}-LDP on {self.k} symbols")

    def check_privacy_structure(self) -> StructureCheck:
        return StructureCheck(
            f"{self.name} (eps={self.epsilon_text}, k={self.k})",
            (
                RatioCheck("y = x: Q(x|x)/Q(x|x') = e^eps/1", math.log(self._keep / self._other), self.epsilon),
                RatioCheck("y != x: Q(y|x)/Q(y|x') <= 1/1", 0.0, self.epsilon),
            ),
        )

    def _channel_rows(self) -> np.ndarray:
        e = self._exp_epsilon()
        one = Fraction(1) if isinstance(e, Fraction) else 1.0
        rows = np.full((self.k, self.k), one / (e + self.k - 1), dtype=object)
        np.fill_diagonal(rows, e / (e + self.k - 1))
        return rows_to_channel_array(rows)

    def _sample_chunk(self, inputs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        keep = rng.random(inputs.size) < self._keep
        other = rng.integers(0, self.k - 1, inputs.size)
        other += other >= inputs  # uniform over the k - 1 symbols != x
        return np.where(keep, inputs, other)

    def _estimate_raw(self, counts: np.ndarray) -> np.ndarray:
        frequencies = counts / float(counts.sum())
        return (frequencies - self._other) / (self._keep - self._other)

    def forward(self, prior) -> np.ndarray:
        prior = np.asarray(prior, dtype=float)
        return self._other * prior.sum() + (self._keep - self._other) * prior

    def adjoint(self, weights) -> np.ndarray:
        return self.forward(weights)  # Q is symmetric


class ChannelMechanism(Mechanism):
    """Deploy any channel together with the E matrix it satisfies.

    Parameters
    ----------
    channel : Channel (k x m)
    privacy : PrivacyMatrix (k x k) — checked: the channel must be certified E-LDP
        (float mode) or construction fails with the first violated pair.
    name : str, optional

    Notes
    -----
    The unbiased estimator needs Q of rank k (the least-squares inverse).
    """

    def __init__(self, channel: Channel, privacy: PrivacyMatrix, name: str | None = None):
        if channel.k != privacy.k:
            raise ValueError(f"the channel has {channel.k} inputs but E is {privacy.k} x {privacy.k}")
        super().__init__(channel.k, channel.n_outputs, None)
        self._channel = channel
        self._privacy = privacy
        self.name = name or f"channel {channel.k}x{channel.n_outputs}"
        certificate = self.certify()
        if not certificate.certified:
            raise ValueError(f"the channel is not E-LDP: {certificate.violations[0].describe()}")

    def _build_privacy(self) -> PrivacyMatrix:
        return self._privacy

    def channel(self) -> Channel:
        return self._channel

    def _channel_rows(self) -> np.ndarray:
        return self._channel.matrix

    def check_privacy_structure(self) -> StructureCheck:
        """One check per constrained pair: ``max_y log Q[x,y]/Q[x',y] <= E[x,x']``."""
        tight = self._channel.tight_privacy().epsilon
        allowed = self._privacy.epsilon
        checks = tuple(
            RatioCheck(f"x={x}, x'={x_prime}: max_y Q(y|x)/Q(y|x')", float(tight[x, x_prime]), float(allowed[x, x_prime]))
            for x in range(self.k)
            for x_prime in range(self.k)
            if x != x_prime and np.isfinite(allowed[x, x_prime])
        )
        return StructureCheck(self.name, checks)

    def _sample_chunk(self, inputs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self._channel.sample(inputs, rng)

    def _estimate_raw(self, counts: np.ndarray) -> np.ndarray:
        return unbiased_estimate(counts, self._channel)

    def forward(self, prior) -> np.ndarray:
        return np.asarray(prior, dtype=float) @ self._channel.matrix

    def adjoint(self, weights) -> np.ndarray:
        return self._channel.matrix @ np.asarray(weights, dtype=float)


def warner_response(epsilon: Level) -> ChannelMechanism:
    """Warner's randomised response, eq. (10), as a mechanism; epsilon-LDP on two symbols."""
    return ChannelMechanism(warner(epsilon), binary_privacy(epsilon, epsilon), f"Warner (10), eps={epsilon}")


def mangat_response(eps21: Level) -> ChannelMechanism:
    """Mangat's improved randomised response, eq. (11); E = [[0, inf], [eps21, 0]]."""
    return ChannelMechanism(mangat(eps21), binary_privacy("inf", eps21), f"Mangat (11), eps21={eps21}")


def binary_optimal_response(eps12: Level, eps21: Level) -> ChannelMechanism:
    """Q* of Theorem 2, eq. (9), as a mechanism; E = [[0, eps12], [eps21, 0]]."""
    return ChannelMechanism(
        binary_optimal(eps12, eps21), binary_privacy(eps12, eps21), f"Q* (9), eps12={eps12}, eps21={eps21}"
    )
