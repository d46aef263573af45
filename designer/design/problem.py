"""What the front door designs for: E (dense or by classes), the utility and its distributions or loss."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from designer.defaults import VERTEX_UTILITIES
from designer.spec import PrivacyMatrix

if TYPE_CHECKING:
    from designer.design.symmetry.classes import ClassStructure

#: Utilities of the front door: the vertex utilities and the expected loss.
UTILITIES = (*VERTEX_UTILITIES, "expected-loss")


@dataclass(frozen=True)
class Problem:
    """A design problem, checked (:meth:`checked`).

    ``privacy`` is a dense :class:`~designer.spec.PrivacyMatrix` or a
    :class:`~designer.design.symmetry.ClassStructure`; ``prior`` and ``alternative`` are per-symbol
    (None: uniform); ``loss`` is the expected-loss utility's k x m loss (None: 0/1 loss).
    """

    privacy: PrivacyMatrix | ClassStructure
    utility: str = "mutual-information"
    prior: np.ndarray | None = None
    alternative: np.ndarray | None = None
    loss: np.ndarray | None = None
    exact: bool = False

    def checked(self) -> Problem:
        """The problem itself, after the checks that need no design (ValueError naming what is wrong)."""
        if self.utility not in UTILITIES:
            raise ValueError(f"utility must be one of {', '.join(UTILITIES)}, got {self.utility!r}")
        if self.utility == "expected-loss" and self.exact:
            raise ValueError("--exact applies to vertex designs (mutual information, f-divergences), not expected-loss")
        if self.loss is not None and self.utility != "expected-loss":
            raise ValueError(f"a loss matrix is the expected-loss utility's (--loss), not {self.utility}'s")
        return self

    @property
    def k(self) -> int:
        return self.privacy.k

    def dense(self) -> PrivacyMatrix | None:
        """The dense E when it was given dense (None for a class structure)."""
        return self.privacy if isinstance(self.privacy, PrivacyMatrix) else None

    def densified(self) -> PrivacyMatrix:
        """The dense E, a class structure's materialised (refused above its dense limit)."""
        return self.privacy if isinstance(self.privacy, PrivacyMatrix) else self.privacy.privacy()

    def prior_or_uniform(self) -> np.ndarray:
        return np.full(self.k, 1.0 / self.k) if self.prior is None else np.asarray(self.prior, dtype=float).ravel()
