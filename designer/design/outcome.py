"""What the front door returns: one :class:`Design` for every route, with its bounds and their proofs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from designer.design.result import json_float

if TYPE_CHECKING:
    from designer.channel import Channel
    from designer.design.interior import Interior

#: The kinds of proof behind a bound.
BOUND_KINDS = (
    "certified channel",  # the returned design's own value: it is E-LDP, so the optimum is at least (at most, for a loss) this
    "dual",  # an LP dual made feasible for every vertex (or orbit): sum(y) bounds every E-LDP channel
    "Lagrangian",  # column generation: sum(y) + a proven bound on the pricing problem
    "relaxation",  # the optimum of a larger feasible set (a row-constant E' >= E*, or no privacy at all)
    "closed form",  # a theorem: the closed form is optimal
    "exact bracket",  # Arb bounds of the exact design and its dual (rigorous to the last digit)
)


@dataclass(frozen=True)
class Bound:
    """One side of the optimum with the kind of proof behind it (:data:`BOUND_KINDS`) and a one-line detail."""

    value: float
    kind: str
    detail: str

    def to_dict(self) -> dict:
        return {"value": json_float(self.value), "kind": self.kind, "detail": self.detail}

    def __str__(self) -> str:
        return f"{self.value:.12g} ({self.kind})"


@dataclass
class Design:
    """A designed channel (or class-level design), with bounds on the optimum, the route and its proof material.

    Attributes
    ----------
    method : str
        The route that ran (:data:`designer.design.routes.METHODS`, without ``"auto"``;
        ``"expected-loss"`` for the loss LP).
    reason : str
        Why that route (one line).
    privacy : PrivacyMatrix or ClassStructure
    utility : str
    channel : Channel or None
        The returned channel, moved inside E for the exact certifier
        (:mod:`designer.design.interior`); None for a class-level design (k x m too large to tabulate:
        see ``route.support``).
    objective : float
        The returned design's utility (nats), or its expected loss for ``"expected-loss"``.
    lower, upper : Bound
        ``lower <= optimum <= upper`` with the kind of proof behind each.
    certificate : Certificate or StructureCertificate
        The returned design's, by the route's kind of certifier (float for a float design; then
        :attr:`exact_proof` says why the exact certifier certifies it too).
    route : DesignResult, SymmetricDesign, GapDesign or ClosedFormDesign
        The route's own result, before the move inside E (for experts).
    interior : Interior or None
        The move inside E (None for exact and class-level designs).
    margin_cost : float
        What the move cost: the route channel's utility minus the returned one's (for a loss, the
        returned loss minus the route's); about 1e-14.
    seconds : float
    timings : dict
    """

    method: str
    reason: str
    privacy: Any
    utility: str
    channel: Channel | None
    objective: float
    lower: Bound
    upper: Bound
    certificate: Any
    route: Any
    interior: Interior | None = None
    margin_cost: float = 0.0
    seconds: float = 0.0
    timings: dict = field(default_factory=dict)

    @property
    def certified(self) -> bool:
        return self.certificate.certified

    def __repr__(self) -> str:
        """One line a person can read at the prompt (the route's result stays in :attr:`route`)."""
        shape = f"{self.channel.k} x {self.channel.n_outputs} channel" if self.channel is not None else "class-level design"
        return (f"Design({self.privacy.name!r}, {self.utility}: {self.objective:.12g}; {self.lower} <= optimum <= "
                f"{self.upper}; method {self.method!r}; {shape}; {self.certificate.verdict})")

    @property
    def exact_proof(self) -> str:
        """How the returned channel is known to be E-LDP in exact arithmetic."""
        if self.certificate.mode.startswith("exact"):
            return "exact certifier" + ("" if self.certificate.mode == "exact" else f" ({self.certificate.mode})")
        if self.interior is not None and self.interior.proven:
            return "margin argument (designer.design.interior): every ratio proven within e^E"
        return "none (float certificate only)"

    def summary(self) -> dict:
        """The route's JSON summary with the front door's keys: method, reason, bounds, the move inside E."""
        margin = self.certificate.margin
        return {
            **self.route.summary(),
            "E": self.privacy.name,
            "k": self.privacy.k,
            "utility": self.utility,
            "objective": self.objective,
            "method": self.method,
            "method_note": self.reason,
            "reason": self.reason,
            "bounds": {"lower": self.lower.to_dict(), "upper": self.upper.to_dict()},
            "certified": self.certified,
            "certificate_mode": self.certificate.mode,
            "margin": json_float(margin),
            "exact_proof": self.exact_proof,
            "interior_shrink": None if self.interior is None else self.interior.shrink,
            "margin_cost": self.margin_cost,
            "materialised": self.channel is not None,
            "seconds": round(self.seconds, 6),
        }

    def save(self, path: str | Path, summary_path: str | Path | None = None, extra: dict | None = None) -> None:
        """Write the channel as CSV (exact fractions for an exact channel), or the class-level design as
        JSON when there is no channel; and optionally the JSON summary with ``extra`` fields. All or nothing
        (:func:`designer.io.write_files`)."""
        from designer.io import json_writer, matrix_csv_writer, write_files

        summary = {**self.summary(), **(extra or {})}
        if self.channel is None:
            writes = [(path, json_writer(summary))]
        else:
            writes = [(path, matrix_csv_writer(self.channel.exact_matrix if self.channel.is_exact else self.channel.matrix))]
        if summary_path is not None:
            writes.append((summary_path, json_writer(summary)))
        write_files(writes)
