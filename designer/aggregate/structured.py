"""Estimates and exact standard errors for structured (Hadamard) packages, never materialising Q.

A ``block-hadamard`` or ``high-low-hadamard`` package (:mod:`designer.deploy.structured`)
deploys, exactly, the channel of :class:`~designer.mechanisms.BlockHadamardResponse`
(context-aware-ldp.md, Section 6.1) or :class:`~designer.mechanisms.HighLowHadamardResponse`
(Section 5.1, channel (13)-(14)) at the level ``eps' = log(T / (2^b - T))`` of its integer
coin ``T``: the sampler reports inside ``S_x`` with probability ``T / 2^b = e^eps' / (1 + e^eps')``,
and a high-low package's keep threshold is ``K = 2T - 2^b``, i.e.
``K / 2^b = (e^eps' - 1) / (e^eps' + 1)``. So the paper's estimators at ``eps'`` are unbiased
for the deployed channel, and the mechanism objects compute them with fast Walsh–Hadamard
transforms in ``O(n_outputs log K)``.

The estimators are linear in the output frequencies ``f``: ``p_hat = A f``, and every row of
``A`` is ``± c`` on a support ``B(x)`` of outputs and 0 elsewhere, with
``c = (e^eps' + 1) / (e^eps' - 1) = 2^b / (2T - 2^b)``:

* block HR, estimator (19): ``p_hat_x = 2c (p(S_x) - p(X_j) / 2) = c (H_{K_j} f_j)[row_x]``,
  ``B(x)`` = the outputs of x's block ``X_j`` (signs of Hadamard row ``row_x``);
* high-low HR, estimator (15) for x in A: ``p_hat_x = c (H_S f_{[S]})[row_x]``, ``B(x) = [S]``;
  estimator (16) for x not in A: ``p_hat_x = c f_{S+i}``, ``B(x)`` = its own output.

Under the multinomial, ``Cov(p_hat) = A (diag(q) - q q^T) A^T / n`` exactly, whose diagonal is

    Var(p_hat_x) = (sum_y A_xy^2 q_y - (A q)_x^2) / n = (c^2 q(B(x)) - p_x^2) / n,

estimated with ``q = f`` (plug-in): ``(c^2 f(B(x)) - p_hat_x^2) / n``, which is never negative
(``|p_hat_x| <= c f(B(x))`` and ``f(B(x)) <= 1``). This is the exact variance that
Appendix C.4 bounds by ``(2c)^2 (2 Var p(S_x) + Var p(X_j) / 2)`` to prove (20). Cost:
``O(k + n_outputs)`` after the estimate (block masses by ``np.add.reduceat``).
"""

from __future__ import annotations

import math

import numpy as np

from designer.errors import one_line
from designer.mechanisms import BlockHadamardResponse, HighLowHadamardResponse
from designer.mechanisms.base import Mechanism

#: Package kinds estimated here.
STRUCTURED_KINDS = ("block-hadamard", "high-low-hadamard")


def deployed_mechanism(document: dict) -> BlockHadamardResponse | HighLowHadamardResponse:
    """The verified structured package's exact channel, as its mechanism at ``eps' = log(T / (2^b - T))``.

    Parameters
    ----------
    document : dict
        A parsed ``block-hadamard`` or ``high-low-hadamard`` package.

    Raises
    ------
    ValueError
        One line: malformed or tampered package, a privacy proof that does not verify, or
        thresholds that are not the paper's channel (a coin ``T <= 2^(b-1)``, which makes
        ``S_x`` no likelier than its complement; a high-low keep ``K != 2T - 2^b``).
    """
    from designer.deploy.sampler import PackageError
    from designer.deploy.structured import verify_structured_package

    try:
        verification = verify_structured_package(document)
    except PackageError as error:
        raise ValueError(one_line(error)) from None
    if not verification.certified:
        raise ValueError("the package's privacy proof does not verify")
    coin, total = int(document["coin"]), 1 << int(document["bits"])
    if 2 * coin <= total:
        raise ValueError(f"coin T = {coin} <= 2^{document['bits']}/2: S_x is not the likelier half; "
                         "this is not the paper's Hadamard response (rebuild the package)")
    level = math.log(coin / (total - coin))
    if document["kind"] == "block-hadamard":
        return BlockHadamardResponse([int(size) for size in document["block_sizes"]], level)
    keep = int(document["keep"])
    if keep != 2 * coin - total:
        raise ValueError(f"keep K = {keep} is not 2T - 2^{document['bits']} = {2 * coin - total}: "
                         "estimators (15)-(16) assume the built keep threshold (rebuild the package)")
    return HighLowHadamardResponse(int(document["k"]), [int(x) for x in document["sensitive"]], level)


def estimator_equations(mechanism: Mechanism) -> str:
    """The paper's equation numbers of the mechanism's unbiased estimator (context-aware-ldp.md)."""
    return "(19)" if isinstance(mechanism, BlockHadamardResponse) else "(15)-(16)"


def support_mass(mechanism: Mechanism, frequencies: np.ndarray) -> np.ndarray:
    """``f(B(x))`` per input symbol: the output mass on the support of row x of the estimator (module docstring)."""
    if isinstance(mechanism, BlockHadamardResponse):
        return np.add.reduceat(frequencies, mechanism.offsets)[mechanism.block_of]
    if isinstance(mechanism, HighLowHadamardResponse):
        mass = np.empty(mechanism.k)
        mass[mechanism.sensitive] = frequencies[: mechanism.hadamard_size].sum()
        mass[mechanism.others] = frequencies[mechanism.own_output[mechanism.others]]
        return mass
    raise TypeError(f"no structured variance for {type(mechanism).__name__}")


def structured_unbiased_interval(counts: np.ndarray, mechanism: Mechanism) -> tuple[np.ndarray, np.ndarray]:
    """The paper's unbiased estimate ((19), or (15)-(16)) and its exact plug-in standard errors.

    Parameters
    ----------
    counts : array (n_outputs,) of report counts per output
    mechanism : BlockHadamardResponse or HighLowHadamardResponse

    Returns
    -------
    (estimate, standard errors), each of length k: ``sqrt((c^2 f(B(x)) - p_hat_x^2) / n)``
    with ``c = (e^eps + 1) / (e^eps - 1)`` (module docstring).
    """
    counts = np.asarray(counts)
    estimate = mechanism.estimate_counts(counts)
    n = float(counts.sum())
    e = math.exp(mechanism.epsilon)
    scale = (e + 1.0) / (e - 1.0)
    variances = (scale**2 * support_mass(mechanism, counts / n) - estimate**2) / n
    return estimate, np.sqrt(np.maximum(variances, 0.0))  # >= 0 in exact arithmetic; clip rounding only
