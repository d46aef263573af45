"""Robust LDP release protocols for ``X = (S, U)`` with a secret ``S`` (robust-ldp-chi-square.md).

Every protocol states its privacy guarantee next to its code:

* F = all distributions: Proposition 4 (``Q`` is (eps, P_X)-RLDP iff
  ``Q[(s,u), y] <= e^eps Q[(s',u'), y]`` whenever ``s != s'``) and Secret
  Randomised Response (Definition 5; private by Lemma 6).
* F = the chi-square confidence set of (3): Independent Reporting
  (Theorems 15-16), GRR-CR (Theorems 17-18) and UE-CR (Theorems 19-20), each
  with its free parameters chosen by maximising ``I_P̂(X; Y)`` numerically, as in
  Sections VI-VII.

Channels are :class:`~designer.channel.Channel` objects whose rows are the inputs
``x = (s, u)`` ordered by ``(s, u)`` (row ``i_s * |U| + i_u``), the order of
:class:`designer.robust.confidence.ConfidenceSet`.

A note on the utility theorems. Theorems 18 and 20 are stated "for any P", but
their proofs use that ``S`` and the reports of ``U`` are independent given the
obfuscated ``S``, which holds when the true conditional ``P_{U|s}`` equals the
``P̂_{U|s}`` the protocol samples from, i.e. at ``P = P̂``. We use them only at
``P̂`` (the utility the paper and this package report) and the tests check them
there against the mutual information of the materialised channel; for
``P != P̂`` call :func:`designer.utility.mutual_information` on the channel.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from designer.channel import Channel
from designer.spec import PrivacyMatrix
from designer.utility import entropy, mutual_information

#: Largest number of outputs UE-CR is materialised with (it has (|U|+1)^|S| outputs).
MAX_MATERIALISED_OUTPUTS = 200_000
#: Largest |S| for the exact UE-CR utility (it sums over the 2^|S| subsets of S).
MAX_UE_SECRETS = 20
#: Largest privacy level a channel is designed at. Beyond it the smallest entries of
#: GRR, SRR and PolyOpt (about e^-eps) fall below the normal doubles (2.2e-308 at
#: eps = 708.4) and the written channel would not be the protocol (an entry that
#: underflows to 0 makes a ratio of (2) infinite). Every protocol is also
#: (eps', F)-RLDP for eps' >= eps, so nothing is lost by designing at this level.
MAX_EPSILON = 700.0


#: SRR's smallest entry is about e^-2eps (Definition 5), so its limit is half.
MAX_SRR_EPSILON = MAX_EPSILON / 2


def check_design_epsilon(epsilon: float, limit: float = MAX_EPSILON, what: str = "a channel") -> float:
    """``epsilon`` as a float if it is a number in ``[0, limit]``, else ValueError (one line)."""
    epsilon = float(epsilon)
    if not 0.0 <= epsilon <= limit:
        raise ValueError(
            f"epsilon must be a number in [0, {limit:g}] to design {what}, got {epsilon!r} "
            f"(beyond {limit:g}, its smallest entries underflow in double precision; a protocol designed at "
            f"eps = {limit:g} is also private at any larger eps)"
        )
    return epsilon


@dataclass(frozen=True)
class RobustProtocol:
    """A designed protocol: its channel (if materialised), parameters and utility.

    Attributes
    ----------
    name : str
        ``"srr"``, ``"grr"``, ``"ir"``, ``"grr-cr"`` or ``"ue-cr"``.
    epsilon : float
        The RLDP level it guarantees.
    params : dict
        The parameters of the paper (``epsilon1``, ``epsilon2``, ``delta``...).
    utility : float
        ``I_P̂(X; Y)`` in nats.
    normalised_utility : float
        ``I_P̂(X; Y) / H_P̂(X)`` (the figures' vertical axis).
    channel : Channel or None
        Rows ``(s, u)``; None when too large to materialise (UE-CR).
    """

    name: str
    epsilon: float
    params: dict
    utility: float
    normalised_utility: float
    channel: Channel | None = field(default=None, repr=False)


# --------------------------------------------------------------------------- building blocks
def randomised_response(k: int, epsilon: float) -> np.ndarray:
    """Generalised randomised response GRR^eps on k symbols, eq. (16); eps-LDP.

    ``Q[x, y] = e^eps / (e^eps + k - 1)`` if ``x = y`` and ``1 / (e^eps + k - 1)`` otherwise.
    """
    if k < 1 or not epsilon >= 0:
        raise ValueError(f"randomised response needs k >= 1 and epsilon >= 0, got k={k}, epsilon={epsilon}")
    if np.isinf(epsilon):
        return np.eye(k)
    scale = np.exp(-epsilon)  # divide through by e^eps: stable for large eps
    matrix = np.full((k, k), scale / (1.0 + (k - 1) * scale))
    np.fill_diagonal(matrix, 1.0 / (1.0 + (k - 1) * scale))
    return matrix


def lemma3_level(epsilon2: float, distance: float) -> float:
    """``delta = log(1 + 2 (e^eps2 - 1) / d)`` of Theorems 15 and 17.

    By Lemma 3 a delta-LDP protocol changes output probabilities by a factor at
    most ``1 + (e^delta - 1) d / 2 = e^eps2`` between distributions at L1 distance ``<= d``.
    """
    if distance <= 0:
        return float("inf")
    if epsilon2 <= 1.0:
        return float(np.log1p(2.0 * np.expm1(epsilon2) / distance))
    # = log((2/d) e^eps2 (1 + (d/2 - 1) e^-eps2)): no overflow of e^eps2 / d for large eps2
    return float(epsilon2 + np.log(2.0 / distance) + np.log1p((0.5 * distance - 1.0) * np.exp(-epsilon2)))


def representable_level(delta: float) -> float:
    """``min(delta, MAX_EPSILON)``: a GRR at a smaller level is still delta-LDP (so Theorems 15,
    17 and 19 still apply), and its entries stay normal doubles (no off-diagonal underflows to 0)."""
    return float(min(delta, MAX_EPSILON))


def proposition4_privacy_matrix(n_secret: int, n_public: int, epsilon: float) -> PrivacyMatrix:
    """The E matrix equivalent to (eps, P_X)-RLDP by Proposition 4.

    ``E[(s,u), (s',u')] = eps`` if ``s != s'`` and ``inf`` if ``s = s'``, so that
    :func:`designer.certify.certify` decides (eps, P_X)-RLDP exactly.
    """
    secret = np.repeat(np.arange(n_secret), n_public)
    values = np.where(secret[:, None] != secret[None, :], float(epsilon), np.inf)
    np.fill_diagonal(values, 0.0)
    return PrivacyMatrix(values, name=f"Proposition 4, (eps={epsilon:g}, all distributions)-RLDP")


def secret_randomised_response(n_secret: int, n_public: int, epsilon: float) -> np.ndarray:
    """SRR^eps of Definition 5, eq. (18): (eps, P_X)-RLDP by Lemma 6.

    ``Q[(s,u), (s',u')]`` is proportional to ``e^eps`` if equal, ``e^-eps`` if
    ``s' = s, u' != u`` and ``1`` if ``s' != s``; the normaliser is
    ``e^eps + e^-eps (a2 - 1) + a - a2``.
    """
    a = n_secret * n_public
    same_secret = np.kron(np.eye(n_secret), np.ones((n_public, n_public)))
    weights = np.where(same_secret > 0, np.exp(-epsilon), 1.0)
    np.fill_diagonal(weights, np.exp(epsilon))
    normaliser = np.exp(epsilon) + np.exp(-epsilon) * (n_public - 1) + a - n_public
    return weights / normaliser


# --------------------------------------------------------------------------- F = all distributions
def srr(confidence, epsilon: float) -> RobustProtocol:
    """Secret Randomised Response (Definition 5) for the layout of ``confidence``.

    Private for every distribution (Lemma 6), so it ignores the confidence set;
    ``confidence`` only supplies the alphabets and P̂ for the utility. Its entries
    ``e^-eps / (e^eps + ...)`` need ``eps <= MAX_SRR_EPSILON`` (350).
    """
    epsilon = check_design_epsilon(epsilon, MAX_SRR_EPSILON, "SRR")
    matrix = secret_randomised_response(*confidence.shape, epsilon)
    return _finish("srr", epsilon, {}, matrix, confidence)


def grr(confidence, epsilon: float) -> RobustProtocol:
    """GRR^eps on the whole of X (eq. (16)): eps-LDP, hence (eps, F)-RLDP for every F (the baseline)."""
    epsilon = check_design_epsilon(epsilon)
    return _finish("grr", epsilon, {}, randomised_response(confidence.prior.size, epsilon), confidence)


# --------------------------------------------------------------------------- Independent Reporting
def ir_distance(confidence) -> float:
    """``d`` of (66): ``min{2, max_s 2 d_s + max_{s,s'} ||P̂_{U|s} - P̂_{U|s'}||_1}``."""
    conditional = confidence.conditional_estimate
    spread = np.abs(conditional[:, None, :] - conditional[None, :, :]).sum(axis=2).max()
    return float(min(2.0, 2.0 * np.max(confidence.conditional_l1_radius) + spread))


def ir_channel(confidence, epsilon: float, epsilon2: float) -> tuple[np.ndarray, dict]:
    """IR (Protocol 1) with GRR on both parts; (eps, F)-RLDP by Theorem 15.

    ``R1 = GRR^{eps - eps2}`` on S and ``R2 = GRR^{delta2}`` on U with
    ``delta2 = log(1 + 2 (e^eps2 - 1) / d)``, d of (66). Outputs ``(y1, y2)``
    ordered like the inputs, so the channel is the Kronecker product.
    """
    epsilon2 = float(np.clip(epsilon2, 0.0, epsilon))
    delta2 = representable_level(lemma3_level(epsilon2, ir_distance(confidence)))
    matrix = np.kron(randomised_response(confidence.shape[0], epsilon - epsilon2),
                     randomised_response(confidence.shape[1], delta2))
    return matrix, {"epsilon1": epsilon - epsilon2, "epsilon2": epsilon2, "delta2": delta2}


def independent_reporting(confidence, epsilon: float, epsilon2: float | None = None) -> RobustProtocol:
    """Independent Reporting (Theorems 15-16) with ``eps2`` maximising ``I_P̂(X; Y)``.

    Section VI: with GRR for both parts only ``eps2 in [0, eps]`` is free; it is
    chosen by a grid plus bounded Brent search (the optimum is often at an end).
    Pass ``epsilon2`` to fix it instead.
    """
    epsilon = check_design_epsilon(epsilon)
    prior = confidence.prior

    def utility(e2: float) -> float:
        return mutual_information(prior, ir_channel(confidence, epsilon, e2)[0])

    chosen = _maximise_1d(utility, epsilon) if epsilon2 is None else float(epsilon2)
    matrix, params = ir_channel(confidence, epsilon, chosen)
    return _finish("ir", epsilon, params, matrix, confidence)


# --------------------------------------------------------------------------- GRR-CR
def cr_levels(confidence, epsilon2: float) -> np.ndarray:
    """``delta_s = log(1 + 2 (e^eps2 - 1) / d_s)`` (Theorem 17), d_s of (65), at most :data:`MAX_EPSILON`."""
    return np.array([representable_level(lemma3_level(epsilon2, d)) for d in confidence.conditional_l1_radius])


def grr_cr_channel(confidence, epsilon: float, epsilon2: float) -> tuple[np.ndarray, dict]:
    """GRR-CR (Protocol 2) with ``R^s = GRR^{delta_s}``; (eps, F)-RLDP by Theorem 17.

    Output ``(s~, y)`` with ``y in U``, column ``i_s~ * |U| + i_y``:
    ``Q[(s,u), (s~,y)] = keep R^s[u, y]`` if ``s~ = s`` and
    ``other (P̂_{U|s~} R^{s~})[y]`` otherwise, with ``keep = e^eps1 / (e^eps1 + a1 - 1)``,
    ``other = 1 / (e^eps1 + a1 - 1)``, ``eps1 = eps - eps2``.
    """
    epsilon2 = float(np.clip(epsilon2, 0.0, epsilon))
    n_secret, n_public = confidence.shape
    deltas = cr_levels(confidence, epsilon2)
    secret_rr = randomised_response(n_secret, epsilon - epsilon2)
    reports = [randomised_response(n_public, delta) for delta in deltas]
    matrix = np.empty((n_secret * n_public, n_secret * n_public))
    for s_tilde, report in enumerate(reports):
        columns = slice(s_tilde * n_public, (s_tilde + 1) * n_public)
        decoy = confidence.conditional_estimate[s_tilde] @ report
        for s in range(n_secret):
            rows = slice(s * n_public, (s + 1) * n_public)
            block = report if s == s_tilde else np.broadcast_to(decoy, report.shape)
            matrix[rows, columns] = secret_rr[s, s_tilde] * block
    return matrix, {"epsilon1": epsilon - epsilon2, "epsilon2": epsilon2, "delta_s": deltas.tolist()}


def grr_cr(confidence, epsilon: float, epsilon2: float | None = None) -> RobustProtocol:
    """GRR-CR (Theorems 17-18) with ``eps2 in [0, eps]`` maximising ``I_P̂(X; Y)`` (Section VII-A)."""
    epsilon = check_design_epsilon(epsilon)
    prior = confidence.prior

    def utility(e2: float) -> float:
        return mutual_information(prior, grr_cr_channel(confidence, epsilon, e2)[0])

    chosen = _maximise_1d(utility, epsilon) if epsilon2 is None else float(epsilon2)
    matrix, params = grr_cr_channel(confidence, epsilon, chosen)
    return _finish("grr-cr", epsilon, params, matrix, confidence)


# --------------------------------------------------------------------------- UE-CR
def ue_lambda(kappa: float, epsilon1: float) -> float:
    """Smallest ``lambda`` with ``kappa (1 - lambda) / (lambda (1 - kappa)) <= e^eps1`` (Theorem 19)."""
    return float(kappa / (kappa + np.exp(epsilon1) * (1.0 - kappa))) if kappa < 1 else 1.0


def _subsets(n: int) -> np.ndarray:
    """All subsets of range(n) as a 0/1 matrix, one row per subset (bit i = member i)."""
    codes = np.arange(2**n)
    return ((codes[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)


def unary_encoding_matrix(n_secret: int, kappa: float, lam: float) -> np.ndarray:
    """``P(UE^{kappa,lambda}(s) = T)`` for every s and subset T (eq. (90)), shape (a1, 2^a1)."""
    members = _subsets(n_secret)  # (2^a1, a1)
    size = members.sum(axis=1)
    own = members.T  # own[s, T] = s in T
    with np.errstate(divide="ignore", invalid="ignore"):
        others_in = size[None, :] - own
        others_out = (n_secret - 1) - others_in
        probability = (np.where(own, kappa, 1 - kappa) * lam**others_in * (1 - lam) ** others_out)
    return np.nan_to_num(probability)


def ue_cr_utility(confidence, kappa: float, lam: float, deltas) -> float:
    """``I_P̂(UE-CR(X); X)`` by Theorem 20, exact at ``P = P̂``.

    ``I(UE(S); S) + kappa sum_s P̂_s I_{P̂_{U|s}}(R^s(U); U)``: the first term sums
    over the 2^|S| subsets (not the (|U|+1)^|S| outputs of the channel).
    """
    if confidence.shape[0] > MAX_UE_SECRETS:
        raise ValueError(f"UE-CR utility sums over 2^|S| subsets; |S| = {confidence.shape[0]} > {MAX_UE_SECRETS}")
    secret_part = mutual_information(confidence.secret_marginal,
                                     unary_encoding_matrix(confidence.shape[0], kappa, lam))
    public_part = sum(
        p_s * mutual_information(row, randomised_response(confidence.shape[1], delta))
        for p_s, row, delta in zip(confidence.secret_marginal, confidence.conditional_estimate, deltas)
        if p_s > 0
    )
    return float(secret_part + kappa * public_part)


def ue_cr_params(confidence, epsilon: float, epsilon2: float, kappa: float) -> dict:
    """Parameters of UE-CR at ``eps2 in [0, eps/2]``, ``kappa``: ``eps1 = eps - eps2`` and the smallest lambda.

    Theorem 19 gives privacy ``max{eps1 + eps2, 2 eps2} = eps``.

    A channel entry multiplies up to ``|S| - 1`` factors ``lambda ~ e^-eps1`` and ``|S|``
    GRR entries ``~ e^-delta_s``; so that it stays a normal double, ``eps1`` is at most
    ``MAX_EPSILON / (2 (|S| - 1))`` and each ``delta_s`` at most ``MAX_EPSILON / (2 |S|)``.
    Lower levels are more private (Theorem 19 and Lemma 3 still apply), and the caps
    only bind at eps in the hundreds, where the utility is already ``H(X)`` to double precision.
    """
    epsilon2 = float(np.clip(epsilon2, 0.0, epsilon / 2))
    kappa = float(np.clip(kappa, 0.0, 1.0))
    n_secret = confidence.shape[0]
    epsilon1 = min(epsilon - epsilon2, MAX_EPSILON / (2 * max(1, n_secret - 1)))
    deltas = np.minimum(cr_levels(confidence, epsilon2), MAX_EPSILON / (2 * n_secret))
    return {"epsilon1": epsilon1, "epsilon2": epsilon2, "kappa": kappa, "lambda": ue_lambda(kappa, epsilon1),
            "delta_s": deltas.tolist()}


def ue_cr_channel(confidence, params: dict) -> tuple[np.ndarray, list[str]]:
    """Materialise UE-CR (Protocol 3): outputs ``(T, (y_s')_{s' in T})``, (|U|+1)^|S| of them.

    ``Q[(s,u), (T, y)] = P(UE(s) = T) prod_{s' in T} M_{s'}[(s,u), y_s']`` with
    ``M_{s'} = R^{s'}[u, .]`` if ``s' = s`` and ``P̂_{U|s'} R^{s'}`` otherwise.
    Output labels read ``{s1:u2,s3:u1}``; outputs of probability 0 for every
    input (e.g. proper subsets when ``kappa = lambda = 1``) are dropped. Raises ValueError beyond
    :data:`MAX_MATERIALISED_OUTPUTS` outputs.
    """
    n_secret, n_public = confidence.shape
    n_outputs = (n_public + 1) ** n_secret
    if n_outputs > MAX_MATERIALISED_OUTPUTS:
        raise ValueError(f"UE-CR has (|U|+1)^|S| = {n_outputs} outputs, more than {MAX_MATERIALISED_OUTPUTS} to materialise")
    reports = [randomised_response(n_public, delta) for delta in params["delta_s"]]
    secret_of_row = np.repeat(np.arange(n_secret), n_public)
    public_of_row = np.tile(np.arange(n_public), n_secret)
    factors = []
    for s_prime, report in enumerate(reports):
        decoy = confidence.conditional_estimate[s_prime] @ report
        factors.append(np.where((secret_of_row == s_prime)[:, None], report[public_of_row], decoy[None, :]))
    encoding = unary_encoding_matrix(n_secret, params["kappa"], params["lambda"])
    blocks, labels = [], []
    secrets, publics = confidence.secret_labels, confidence.public_labels
    for code, members in enumerate(_subsets(n_secret)):
        block = encoding[secret_of_row, code][:, None]
        chosen = np.flatnonzero(members)
        for s_prime in chosen:
            block = (block[:, :, None] * factors[s_prime][:, None, :]).reshape(len(secret_of_row), -1)
        blocks.append(block)
        for ys in itertools.product(range(n_public), repeat=len(chosen)):
            labels.append("{" + ",".join(f"{secrets[s]}:{publics[y]}" for s, y in zip(chosen, ys)) + "}")
    matrix = np.hstack(blocks)
    used = np.flatnonzero(matrix.max(axis=0) > 0)  # kappa = lambda = 1 never reports a proper subset
    return matrix[:, used], [labels[j] for j in used]


def ue_cr(confidence, epsilon: float, epsilon2: float | None = None, kappa: float | None = None,
          materialise: bool = True) -> RobustProtocol:
    """UE-CR (Theorems 19-20) with ``(eps2, kappa)`` maximising ``I_P̂(X; Y)`` (Section VII-B).

    The paper's three parameters ``(eps2, kappa, lambda)`` reduce to two: for a
    given kappa, a smaller lambda reveals more about S, so lambda sits on the
    privacy boundary of Theorem 19 (:func:`ue_lambda`); ``eps2 in [0, eps/2]``
    and ``eps1 = eps - eps2`` make the guarantee ``max{eps1 + eps2, 2 eps2} = eps``.
    A 9 x 11 grid is refined by bounded L-BFGS-B. ``kappa = lambda = 1`` is
    allowed (report everything, spend nothing on S), the paper's low-eps optimum.
    Pass both ``epsilon2`` and ``kappa`` to fix them instead.
    """
    epsilon = check_design_epsilon(epsilon)
    def utility(point) -> float:
        params = ue_cr_params(confidence, epsilon, point[0], point[1])
        return ue_cr_utility(confidence, params["kappa"], params["lambda"], params["delta_s"])

    if (epsilon2 is None) != (kappa is None):
        raise ValueError("give both epsilon2 and kappa, or neither (then both are optimised)")
    if epsilon2 is None:
        grid = [(e2, k) for e2 in np.linspace(0, epsilon / 2, 9) for k in np.linspace(0, 1, 11)]
        values = [utility(point) for point in grid]
        start = grid[int(np.argmax(values))]
        from scipy.optimize import minimize

        result = minimize(lambda p: -utility(p), np.array(start), method="L-BFGS-B",
                          bounds=[(0, epsilon / 2), (0, 1)])
        epsilon2, kappa = tuple(result.x) if -result.fun > max(values) else start
    params = ue_cr_params(confidence, epsilon, epsilon2, kappa)
    value = ue_cr_utility(confidence, params["kappa"], params["lambda"], params["delta_s"])
    channel = None
    if materialise:
        matrix, labels = ue_cr_channel(confidence, params)
        channel = Channel(matrix, confidence.input_labels, labels)
    return RobustProtocol("ue-cr", epsilon, params, value, value / entropy(confidence.prior), channel)


# --------------------------------------------------------------------------- helpers
def _maximise_1d(function, upper: float, grid: int = 17) -> float:
    """Maximise ``function`` on ``[0, upper]``: a grid, then bounded Brent next to the best point."""
    points = np.linspace(0.0, upper, grid)
    values = np.array([function(p) for p in points])
    best = int(np.argmax(values))
    lo, hi = points[max(best - 1, 0)], points[min(best + 1, grid - 1)]
    if hi > lo:
        from scipy.optimize import minimize_scalar

        result = minimize_scalar(lambda p: -function(p), bounds=(lo, hi), method="bounded",
                                 options={"xatol": 1e-6 * max(upper, 1e-12)})
        if -result.fun > values[best]:
            return float(result.x)
    return float(points[best])


def _finish(name: str, epsilon: float, params: dict, matrix: np.ndarray, confidence) -> RobustProtocol:
    channel = Channel(matrix, confidence.input_labels, confidence.input_labels
                      if matrix.shape[1] == confidence.prior.size else None)
    value = mutual_information(confidence.prior, matrix)
    return RobustProtocol(name, float(epsilon), params, value, value / entropy(confidence.prior), channel)


PROTOCOLS = {"srr": srr, "grr": grr, "ir": independent_reporting, "grr-cr": grr_cr, "ue-cr": ue_cr}
"""Protocol constructors by CLI name; each takes ``(confidence, epsilon)``."""
