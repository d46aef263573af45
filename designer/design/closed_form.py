"""Closed-form optimal designs: the registry the front door consults first.

Each entry of :data:`CLOSED_FORMS` is a :class:`ClosedForm`: ``applies(problem)`` returns the
reason it applies (one line, with the theorem) or None, and ``design(problem)`` returns the
channel with the theorem that makes it optimal. :func:`designer.design.routes.choose_route`
tries the entries in order, before any LP; an entry with ``under_auto=False`` runs only when asked
for (``method="closed-form"``). A new closed form (say, the truncated geometric mechanism for
``E = eps |i - j|`` on a line) is a module with its ``applies`` and ``design`` and one line here.

Registered:

* :data:`BINARY_Q_STAR` — Theorem 2 of context-aware-ldp.md: for a binary domain, Q* of eq. (9)
  is optimal for every utility that obeys the data processing inequality (mutual information and
  the f-divergences). Not under ``auto``: the vertex LP at k = 2 finds the same Q* (tested) and
  adds its dual certificate and vertex budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from designer.channel import Channel
from designer.defaults import VERTEX_UTILITIES
from designer.design.problem import Problem


@dataclass(frozen=True)
class ClosedFormDesign:
    """A closed-form optimum: the channel and the theorem that proves it optimal."""

    channel: Channel
    theorem: str

    def summary(self) -> dict:
        return {"closed_form": self.theorem, "n_outputs": self.channel.n_outputs}


@dataclass(frozen=True)
class ClosedForm:
    """One closed form: when it applies (its reason, or None) and its design."""

    name: str
    applies: Callable[[Problem], str | None]
    design: Callable[[Problem], ClosedFormDesign]
    under_auto: bool = True


def _binary_applies(problem: Problem) -> str | None:
    privacy = problem.dense()
    if privacy is None or privacy.k != 2 or problem.utility not in VERTEX_UTILITIES or problem.exact:
        return None
    return "binary domain: Q* of eq. (9) is optimal for every utility obeying data processing (Theorem 2)"


def _binary_design(problem: Problem) -> ClosedFormDesign:
    from designer.design.repair import merge_proportional_columns
    from designer.mechanisms import binary_optimal

    privacy = problem.dense()
    q_star = binary_optimal(float(privacy.epsilon[0, 1]), float(privacy.epsilon[1, 0]))
    return ClosedFormDesign(Channel(merge_proportional_columns(q_star.matrix)), "Theorem 2, eq. (9)")


BINARY_Q_STAR = ClosedForm("binary Q*", _binary_applies, _binary_design, under_auto=False)

#: The closed forms, tried in this order.
CLOSED_FORMS: list[ClosedForm] = [BINARY_Q_STAR]
