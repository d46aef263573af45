"""Structured mechanisms of the papers, each stated next to its privacy guarantee."""

from designer.mechanisms.base import Mechanism, RatioCheck, StructureCheck
from designer.mechanisms.binary import binary_optimal, binary_privacy, mangat, warner
from designer.mechanisms.hadamard import BlockHadamardResponse, HadamardResponse, HighLowHadamardResponse
from designer.mechanisms.randomized_response import (
    ChannelMechanism,
    GeneralizedRandomizedResponse,
    binary_optimal_response,
    mangat_response,
    warner_response,
)

__all__ = [
    "BlockHadamardResponse",
    "ChannelMechanism",
    "GeneralizedRandomizedResponse",
    "HadamardResponse",
    "HighLowHadamardResponse",
    "Mechanism",
    "RatioCheck",
    "StructureCheck",
    "binary_optimal",
    "binary_optimal_response",
    "binary_privacy",
    "mangat",
    "mangat_response",
    "warner",
    "warner_response",
]
