"""design --exact through the orbit LP: rational channels, exact certificates, rigorous bounds."""

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.cli import app
from designer.design.vertex import design_by_vertices
from designer.spec import PrivacyMatrix
from designer.design.symmetry import ClassStructure, design_symmetric
from designer.design.symmetry.exact import ExactSupport, exact_structural_certificate
from designer.design.symmetry.orbits import enumerate_orbits, row_levels

runner = CliRunner()


def staircase_optimum(k: int, ratio: float) -> float:
    """Kairouz-Oh-Viswanath / Ye-Barg for e^eps = ratio: ``max_d log(k / s_d) + d ratio log(ratio) / s_d``."""
    d = np.arange(1, k, dtype=float)
    s = d * ratio + k - d
    return float(np.max(np.log(k / s) + d * ratio * math.log(ratio) / s))


def dense(blocks: list[list[int]], sensitive: int | None, level: str) -> PrivacyMatrix:
    """E written as text: ``level`` between members of a block (or from a sensitive symbol), inf elsewhere."""
    k = sum(map(len, blocks))
    block_of = {x: b for b, members in enumerate(blocks) for x in members}
    rows = []
    for x in range(k):
        constrained = (lambda z: x < sensitive) if sensitive is not None else (lambda z: block_of[x] == block_of[z])
        rows.append(["0" if z == x else (level if constrained(z) else "inf") for z in range(k)])
    return PrivacyMatrix(np.array(rows, dtype=object))


def column_types(matrix) -> set:
    """The multisets of each column's normalised exact entries (its vertex orbit, for an exchangeable E)."""
    return {tuple(sorted(value / sum(column) for value in column)) for column in np.asarray(matrix, dtype=object).T.tolist()}


@pytest.mark.parametrize(
    "structure, privacy",
    [
        (ClassStructure.classic(5, "log(3)"), dense([list(range(5))], None, "log(3)")),
        (ClassStructure.high_low(7, 3, "log(2)"), dense([list(range(7))], 3, "log(2)")),
        (ClassStructure.block([3, 4], "log(5/2)"), dense([[0, 1, 2], [3, 4, 5, 6]], None, "log(5/2)")),
        (ClassStructure.classic(6, 1), dense([list(range(6))], None, "1")),
    ],
)
def test_small_k_exact_equals_the_enumeration_paths_exact_result(structure, privacy):
    """The same rational vertex orbits, both certified exactly, the bounds around the enumerated optimum.

    (The enumeration's basic solution picks some vertices of an orbit, the orbit LP all its cyclic
    shifts; the vertices' multisets of exact entries agree.)
    """
    symmetric = design_symmetric(structure, exact=True)
    enumerated = design_by_vertices(privacy, exact=True)
    assert symmetric.certified and enumerated.certified
    assert symmetric.certificate.mode == "exact" and enumerated.certificate.mode == "exact"
    assert column_types(symmetric.channel.exact_matrix) == column_types(enumerated.channel.exact_matrix)
    assert symmetric.objective == pytest.approx(enumerated.objective, abs=1e-13)
    bracket = symmetric.bracket
    assert bracket.lower <= enumerated.objective + 1e-15 and enumerated.objective <= bracket.upper + 1e-15
    assert 0 <= bracket.width < 1e-13


def test_rational_epsilon_uses_a_lower_bound_of_e_and_says_so():
    result = design_symmetric(ClassStructure.classic(6, 1), exact=True)
    assert result.note.startswith("e^1 is irrational")
    ratio = Fraction(result.exact_ratios[0])
    assert ratio < Fraction(math.e) + Fraction(1, 10**15) and math.e - float(ratio) < 1e-15
    assert 0 < result.certificate.margin < 1e-30  # 1 - log(ratio): the cone shrinks by < 1e-38
    assert result.bracket.lower <= staircase_optimum(6, math.e) + 1e-15 <= result.bracket.upper + 2e-15
    assert design_symmetric(ClassStructure.classic(6, "log(3)"), exact=True).note is None


def test_classic_k1000_log3_certifies_exactly():
    result = design_symmetric(ClassStructure.classic(1000, "log(3)"), exact=True)
    assert result.certified and result.certificate.mode == "exact structural" and result.certificate.margin == 0
    assert result.bracket.lower <= staircase_optimum(1000, 3.0) + 1e-15
    assert staircase_optimum(1000, 3.0) <= result.bracket.upper + 1e-15 and result.bracket.width < 1e-12
    matrix = result.channel.exact_matrix  # independent exact checks of the tabulated channel
    assert all(sum(row, Fraction(0)) == 1 for row in matrix.tolist())
    for y in (0, 499, matrix.shape[1] - 1):
        column = matrix[:, y].tolist()
        assert max(column) / min(column) == 3
    (column,) = result.support
    weight = Fraction(column.exact_weight)
    assert weight * (column.high[0] * 3 + column.low[0]) == 1000  # row sums of the class, exactly


def test_exact_structural_certificate_refuses_wrong_weights():
    structure = ClassStructure.high_low(50, 5, "log(3)")
    epsilon, components = row_levels(structure)
    orbits = enumerate_orbits(structure, epsilon, components)
    ratios = [Fraction(3), Fraction(1)]
    result = design_symmetric(structure, exact=True, materialise=False)
    assert result.certified and result.certificate.mode == "exact structural"
    support = [int(np.flatnonzero((orbits.high == c.high).all(axis=1) & (orbits.low == c.low).all(axis=1))[0]) for c in result.support]
    weights = {o: Fraction(c.exact_weight) for o, c in zip(support, result.support)}
    assert exact_structural_certificate(ExactSupport(structure, components, epsilon, orbits, ratios, weights)).certified
    nudged = {o: w + Fraction(1, 10**30) for o, w in weights.items()}
    assert not exact_structural_certificate(ExactSupport(structure, components, epsilon, orbits, ratios, nudged)).certified
    too_high = [Fraction(3) + Fraction(1, 10**30), Fraction(1)]
    assert not exact_structural_certificate(ExactSupport(structure, components, epsilon, orbits, too_high, weights)).certified


def test_cli_exact_family_class_file_and_refusals(tmp_path):
    out = tmp_path / "Q.csv"
    outcome = runner.invoke(app, ["design", "--family", "ldp", "--k", "40", "--eps", "log(3)", "--exact", "--out", str(out), "--json"])
    assert outcome.exit_code == 0, outcome.output
    summary = json.loads(outcome.stdout)
    assert summary["exact"] and summary["certified"] and summary["certificate_mode"] == "exact"
    lower, upper = summary["optimum_bounds"]
    assert lower <= staircase_optimum(40, 3.0) + 1e-15 <= upper + 2e-15
    rows = [[Fraction(v) for v in line.split(",")] for line in out.read_text().splitlines()]
    assert len(rows) == 40 and all(sum(row) == 1 for row in rows)
    classes = tmp_path / "E.json"
    classes.write_text(json.dumps({"classes": [{"size": 3000}, {"size": 500}], "levels": [["log(3)", "log(3)"], ["inf", "inf"]]}))
    arguments = ["design", "--classes", str(classes), "--exact", "--out", str(tmp_path / "Q2.csv"), "--summary", str(tmp_path / "D.json")]
    outcome = runner.invoke(app, arguments)
    assert outcome.exit_code == 0 and "exact structural certificate" in outcome.stdout and "rigorous bounds" in outcome.stdout
    design = json.loads((tmp_path / "D.json").read_text())
    assert design["exact_ratios"] == ["3", "1"] and all("/" in c["exact_weight"] or c["exact_weight"].isdigit() for c in design["support"])
    enumerated = runner.invoke(
        app, ["design", "--family", "ldp", "--k", "6", "--eps", "log(3)", "--exact", "--method", "enumerate", "--out", str(out), "--json"]
    )
    orbit = runner.invoke(app, ["design", "--family", "ldp", "--k", "6", "--eps", "log(3)", "--exact", "--out", str(out), "--json"])
    assert enumerated.exit_code == 0 and orbit.exit_code == 0
    first, second = json.loads(enumerated.stdout), json.loads(orbit.stdout)
    assert first["certificate_mode"] == second["certificate_mode"] == "exact" and first["margin"] == second["margin"] == 0
    assert second["optimum_bounds"][0] <= first["objective"] + 1e-15 and first["objective"] <= second["optimum_bounds"][1] + 1e-15
    for bad in ("log(1/2)", "-1", "e"):
        outcome = runner.invoke(app, ["design", "--family", "ldp", "--k", "40", "--eps", bad, "--exact", "--out", str(out)])
        assert outcome.exit_code == 2 and "--eps" in outcome.output
    outcome = runner.invoke(app, ["design", "--E", "x.csv", "--method", "column-generation", "--exact", "--out", str(out)])
    assert outcome.exit_code == 2


def test_dense_e_with_exact_uses_exact_twin_classes(tmp_path):
    """A dense log(3) E above k = 16 runs the exact orbit LP; differently written levels in a class refuse it."""
    from designer.design.symmetry import twin_classes
    from designer.design.symmetry.exact import with_exact_levels

    k = 20
    rows = [["0" if x == z else "log(3)" for z in range(k)] for x in range(k)]
    e_file = tmp_path / "E.csv"
    e_file.write_text("\n".join(map(",".join, rows)) + "\n")
    out = tmp_path / "Q.csv"
    outcome = runner.invoke(app, ["design", "--E", str(e_file), "--exact", "--out", str(out), "--json"])
    assert outcome.exit_code == 0, outcome.output
    summary = json.loads(outcome.stdout)
    assert summary["certificate_mode"] == "exact" and summary["margin"] == 0 and "twin classes" in summary["method_note"]
    lower, upper = summary["optimum_bounds"]
    assert lower <= staircase_optimum(k, 3.0) + 1e-15 <= upper + 2e-15
    table = [[Fraction(v) for v in line.split(",")] for line in out.read_text().splitlines()]
    assert all(sum(row) == 1 for row in table) and all(max(column) / min(column) == 3 for column in zip(*table))
    rows[0][1] = "1.0986122886681098"  # the float of log(3), written as a decimal: same float, another number
    mixed = PrivacyMatrix(np.array(rows, dtype=object))
    structure = twin_classes(mixed)
    assert structure.r == 1 and with_exact_levels(mixed, structure) is None
    assert with_exact_levels(PrivacyMatrix(np.array([[v if v != "1.0986122886681098" else "log(3)" for v in row] for row in rows], dtype=object)), structure) is not None


def test_class_levels_written_differently_are_refused_in_exact_mode(tmp_path):
    classes = tmp_path / "E.json"
    levels = [["log(3)", "1.0986122886681098"], ["inf", "inf"]]  # one float, two numbers
    classes.write_text(json.dumps({"classes": [{"size": 30}, {"size": 70}], "levels": levels}))
    outcome = runner.invoke(app, ["design", "--classes", str(classes), "--exact", "--out", str(tmp_path / "Q.csv")])
    assert outcome.exit_code == 2 and "differ exactly" in outcome.output and not (tmp_path / "Q.csv").exists()
    outcome = runner.invoke(app, ["design", "--classes", str(classes), "--out", str(tmp_path / "Q.csv")])
    assert outcome.exit_code == 0  # float mode: one level
