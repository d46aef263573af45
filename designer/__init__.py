"""ldp-designer: design, certify and deploy context-aware local differential privacy.

Public API (see README.md):

* :class:`PrivacyMatrix` — the E matrix of Definition 2 and its families;
* :class:`Channel` — a randomised channel ``Q[x, y]``, with composition and
  post-processing;
* :func:`certify` — decide E-LDP, in float or exact mode, with witnesses;
* :mod:`designer.mechanisms` — structured mechanisms of the papers.
"""

from designer.certify import Certificate, Violation, certify
from designer.channel import Channel, parallel_composition, sequential_composition
from designer.exact import ExactEpsilon
from designer.mechanisms import binary_optimal, binary_privacy, mangat, warner
from designer.spec import PrivacyMatrix

__all__ = [
    "Certificate",
    "Channel",
    "ExactEpsilon",
    "PrivacyMatrix",
    "Violation",
    "binary_optimal",
    "binary_privacy",
    "certify",
    "mangat",
    "parallel_composition",
    "sequential_composition",
    "warner",
]
