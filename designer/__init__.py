"""ldp-designer: design, certify and deploy context-aware local differential privacy.

Public API (see README.md):

* :class:`PrivacyMatrix` — the E matrix of Definition 2 and its families;
* :class:`Channel` — a randomised channel ``Q[x, y]``, with composition and
  post-processing;
* :func:`certify` — decide E-LDP, in float or exact mode, with witnesses;
* :mod:`designer.mechanisms` — structured mechanisms of the papers, deployable at scale
  (Hadamard response, high-low and block HR, randomised response; sampler + estimator);
* :mod:`designer.estimation` — unbiased inverse and EM maximum likelihood for any channel;
* :mod:`designer.theory` — the error bounds (17), (20) and sample complexities;
* :class:`ConfidenceSet` — the χ² confidence set F of robust LDP (robust-ldp-chi-square.md);
  :mod:`designer.robust` holds its protocols, PolyOpt and the robust certifier.
"""

from designer.certify import Certificate, Violation, certify
from designer.channel import Channel, parallel_composition, sequential_composition
from designer.design import DesignResult, design_channel, design_expected_loss
from designer.exact import ExactEpsilon
from designer.matrix_mechanism import Strategy, certify_strategy, design_overcomplete, design_strategy
from designer.estimation import maximum_likelihood, project_onto_simplex, unbiased_estimate
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
from designer.range_mechanism import L1RangeMechanism, RangeOracle
from designer.robust.confidence import ConfidenceSet
from designer.spec import PrivacyMatrix

__all__ = [
    "BlockHadamardResponse",
    "Certificate",
    "Channel",
    "ChannelMechanism",
    "ConfidenceSet",
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
    "design_channel",
    "design_expected_loss",
    "design_overcomplete",
    "design_strategy",
    "mangat",
    "maximum_likelihood",
    "parallel_composition",
    "project_onto_simplex",
    "sequential_composition",
    "unbiased_estimate",
    "warner",
]
