"""Which design method runs for an E: enumeration (small k), the orbit LP, and why.

``auto``: a dense E with at most :data:`ENUMERATION_K` symbols keeps the vertex
enumeration of :func:`designer.design.design_channel` (small-k results unchanged);
a larger one is searched for twin classes (:func:`designer.design.symmetry.classes.twin_classes`)
and solved by the orbit LP when E is row-constant on them; otherwise ("symmetry
lost") enumeration runs and may refuse. An E given by classes (family parameters,
class file) always uses the orbit LP.
"""

from __future__ import annotations

from designer.design.symmetry.classes import ClassStructure, twin_classes
from designer.design.symmetry.orbits import SymmetryLostError, check_orbit_count, row_levels

#: Dense E up to this many symbols are enumerated under ``auto`` (classic LDP: 65,534 vertices).
ENUMERATION_K = 16


def symmetric_structure(privacy, prior=None, alternative=None, method: str = "auto") -> tuple[ClassStructure | None, str]:
    """The class structure to design with (None: enumerate), and a note saying which method runs and why."""
    if method == "enumerate" or (method == "auto" and privacy.k <= ENUMERATION_K):
        return None, "vertex enumeration"
    structure = twin_classes(privacy, prior, alternative)
    try:
        epsilon, components = row_levels(structure)
        check_orbit_count(structure, epsilon, components)
    except SymmetryLostError as error:
        if method == "symmetry":
            raise
        return None, f"symmetry lost ({structure.r} twin classes: {error}); vertex enumeration"
    return structure, f"symmetry: {structure.r} twin classes of sizes {_sizes(structure)}, orbit LP"


def design_structure(privacy, prior=None, alternative=None, method: str = "auto", exact: bool = False):
    """The class structure for the orbit LP (None: enumerate) and the note naming the method, for a dense E or classes.

    A :class:`ClassStructure` is used as given (``method="enumerate"`` asks for the vertex
    enumeration instead); a dense E goes through :func:`symmetric_structure`. With ``exact``
    the twin classes must hold identically written levels (:func:`with_exact_levels`).
    """
    if isinstance(privacy, ClassStructure):
        if method == "enumerate":
            return None, "vertex enumeration" + (" (exact)" if exact else "")
        return privacy.with_distributions(prior, alternative), "symmetry: classes given, orbit LP" + (" (exact)" if exact else "")
    structure, note = symmetric_structure(privacy, prior, alternative, method)
    if not exact:
        return structure, note
    if structure is not None:
        from designer.design.symmetry.exact import with_exact_levels

        structure = with_exact_levels(privacy, structure)
        if structure is None:
            return None, "symmetry lost for --exact (a twin class holds differently written levels); vertex enumeration (exact)"
    return structure, f"{note} (exact)"


def _sizes(structure: ClassStructure) -> str:
    sizes = structure.sizes.tolist()
    return ", ".join(map(str, sizes[:6])) + (", ..." if len(sizes) > 6 else "")
