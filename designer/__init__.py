"""ldp-designer: design, certify and deploy context-aware local differential privacy.

Public API (see README.md):

* :class:`PrivacyMatrix` — the E matrix of Definition 2 and its families;
* :class:`Channel` — a randomised channel ``Q[x, y]``, with composition and
  post-processing;
* :func:`certify` — decide E-LDP, in float or exact mode, with witnesses;
* :func:`design_channel` — the front door of optimal design: any E (dense or a
  :class:`ClassStructure`), any utility; it picks the route and returns a :class:`Design` with
  bounds on the optimum and a channel the exact certifier certifies as returned. Its routes are
  public too: :func:`design_by_vertices` (vertex LP), :func:`design_symmetric` (orbit LP, k = 10^5
  and beyond), :func:`design_with_gap` (column generation with certified bounds),
  :func:`design_expected_loss`;
* :mod:`designer.mechanisms` — structured mechanisms of the papers, deployable at scale
  (Hadamard response, high-low and block HR, randomised response; sampler + estimator);
* :mod:`designer.estimation` — unbiased inverse and EM maximum likelihood for any channel;
* :mod:`designer.theory` — the error bounds (17), (20) and sample complexities;
* :class:`ConfidenceSet` — the χ² confidence set F of robust LDP (robust-ldp-chi-square.md);
  :mod:`designer.robust` holds its protocols, PolyOpt and the robust certifier;
* :func:`shuffle_channel` — the central (epsilon, delta) guarantee of n shuffled reports of a
  channel (:mod:`designer.shuffle`).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

#: Where each public name lives. ``import designer`` loads none of these modules:
#: a name is imported on first access (PEP 562), so a command that needs only the
#: certifier never pays for cvxpy, scipy.stats or python-flint.
_PUBLIC = {
    "BlockHadamardResponse": "designer.mechanisms",
    "Certificate": "designer.certify",
    "Channel": "designer.channel",
    "ClassStructure": "designer.design.symmetry",
    "ChannelMechanism": "designer.mechanisms",
    "ConfidenceSet": "designer.robust.confidence",
    "Design": "designer.design.outcome",
    "DesignResult": "designer.design.result",
    "ExactEpsilon": "designer.exact",
    "GeneralizedRandomizedResponse": "designer.mechanisms",
    "HadamardResponse": "designer.mechanisms",
    "HighLowHadamardResponse": "designer.mechanisms",
    "L1RangeMechanism": "designer.metric.range_mechanism",
    "PrivacyMatrix": "designer.spec",
    "RangeOracle": "designer.metric.range_mechanism",
    "Strategy": "designer.metric.strategy",
    "Violation": "designer.certify",
    "binary_optimal": "designer.mechanisms",
    "binary_privacy": "designer.mechanisms",
    "certify": "designer.certify",
    "certify_strategy": "designer.metric.strategy",
    "design_by_vertices": "designer.design.vertex",
    "design_channel": "designer.design.front",
    "design_expected_loss": "designer.design.expected_loss",
    "design_symmetric": "designer.design.symmetry",
    "design_with_gap": "designer.design.gap",
    "design_overcomplete": "designer.metric.strategy",
    "design_strategy": "designer.metric.strategy",
    "mangat": "designer.mechanisms",
    "maximum_likelihood": "designer.estimation",
    "parallel_composition": "designer.channel",
    "project_onto_simplex": "designer.estimation",
    "sequential_composition": "designer.channel",
    "shuffle_channel": "designer.shuffle.analysis",
    "unbiased_estimate": "designer.estimation",
    "warner": "designer.mechanisms",
}
__all__ = [
    "BlockHadamardResponse",
    "Certificate",
    "Channel",
    "ChannelMechanism",
    "ClassStructure",
    "ConfidenceSet",
    "Design",
    "DesignResult",
    "ExactEpsilon",
    "GeneralizedRandomizedResponse",
    "HadamardResponse",
    "HighLowHadamardResponse",
    "L1RangeMechanism",
    "PrivacyMatrix",
    "RangeOracle",
    "Strategy",
    "Violation",
    "binary_optimal",
    "binary_privacy",
    "certify",
    "certify_strategy",
    "design_by_vertices",
    "design_channel",
    "design_expected_loss",
    "design_overcomplete",
    "design_strategy",
    "design_symmetric",
    "design_with_gap",
    "mangat",
    "maximum_likelihood",
    "parallel_composition",
    "project_onto_simplex",
    "sequential_composition",
    "shuffle_channel",
    "unbiased_estimate",
    "warner",
]

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from designer.certify import Certificate, Violation, certify
    from designer.channel import Channel, parallel_composition, sequential_composition
    from designer.design.expected_loss import design_expected_loss
    from designer.design.front import design_channel
    from designer.design.gap import design_with_gap
    from designer.design.outcome import Design
    from designer.design.result import DesignResult
    from designer.design.symmetry import ClassStructure, design_symmetric
    from designer.design.vertex import design_by_vertices
    from designer.estimation import maximum_likelihood, project_onto_simplex, unbiased_estimate
    from designer.exact import ExactEpsilon
    from designer.mechanisms import (
        BlockHadamardResponse,
        ChannelMechanism,
        GeneralizedRandomizedResponse,
        HadamardResponse,
        HighLowHadamardResponse,
        binary_optimal,
        binary_privacy,
        mangat,
        warner,
    )
    from designer.metric.range_mechanism import L1RangeMechanism, RangeOracle
    from designer.metric.strategy import Strategy, certify_strategy, design_overcomplete, design_strategy
    from designer.robust.confidence import ConfidenceSet
    from designer.shuffle.analysis import shuffle_channel
    from designer.spec import PrivacyMatrix


def __getattr__(name: str) -> object:
    """Import a public name (or a submodule) on first access (PEP 562)."""
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value  # later accesses skip this hook
        return value
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """The package's module type: ``designer.certify`` stays the function.

    Importing the submodule ``designer.certify`` binds it as an attribute of the
    package after it runs; the public name is the function :func:`certify`, as
    with eager imports, so that binding is replaced by the function.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name == "certify" and isinstance(value, types.ModuleType):
            value = value.certify
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
