"""Shuffling orbit packages: class-level pair classes against the materialised table, pair by pair."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.channel import Channel
from designer.cli import app
from designer.deploy.orbit import build_orbit_package, orbit_channel
from designer.deploy.sampler import PackageTampered, check_orbit_structure, package_digest
from designer.shuffle.analysis import shuffle_guarantee
from designer.shuffle.clones import table_pairs
from designer.shuffle.orbits import orbit_pairs
from designer.shuffle.sources import channel_pairs, package_pairs
from designer.spec import PrivacyMatrix
from designer.design.symmetry import ClassStructure, design_symmetric
from test_shuffle import exact_worst_epsilon

runner = CliRunner()
#: Relative rounding of the compared floats (the table's numbers are float sums of its rounded entries).
RTOL = 1e-12
#: The two central epsilons are bisection results of the same numerics on inputs equal to a few ulps.
EPSILON_RTOL = 1e-6

STRUCTURES = {
    "ldp6": ClassStructure.classic(6, 1.0),
    "ldp5-small-eps": ClassStructure.classic(5, 0.3),
    "block5-6": ClassStructure.block([5, 6], 1.0),
    "high-low9": ClassStructure.high_low(9, 4, 0.5),
    "uldp7": ClassStructure.utility_optimized(7, 3, 1.0),
}


def built(name: str) -> dict:
    return build_orbit_package(design_symmetric(STRUCTURES[name], materialise=False))


def mixed_package() -> dict:
    """Classes of sizes 4 and 6 varying together on 12 columns (offsets modulo gcd = 2), zeros included,
    and an orbit where class 1 is constant (a pair-class fixture; its E-LDP is not the point)."""
    edited = copy.deepcopy(built("ldp6"))
    edited["classes"] = [[["0", "1"], ["6", "7"]], [["2", "5"], ["8", "9"]]]
    edited["class_E"] = [["1", "2"], ["inf", "1"]]
    edited["orbits"] = [
        {"columns": "12", "high": ["1", "2"], "low": ["2", "3"],
         "cells_high": [str(1 << 30), str(1 << 31)], "cells_low": [str(1 << 30), str(1 << 30)]},
        {"columns": "4", "high": ["3", "0"], "low": ["1", "6"],
         "cells_high": [str(3 << 29), "0"], "cells_low": [str(1 << 29), str(1 << 30)]},
    ]
    edited["sha256"] = package_digest(edited)
    return edited


def documents():
    for name in STRUCTURES:
        yield name, built(name)
    yield "mixed4-6", mixed_package()


def materialised(document: dict) -> tuple[np.ndarray, np.ndarray, PrivacyMatrix]:
    """The float table of a package, each input's class, and the symbol-level E."""
    structure = check_orbit_structure(document)
    group = np.empty(structure.k, dtype=np.int64)
    for first, last, a, _ in structure.ranges:
        group[first:last + 1] = a
    levels = np.array(structure.levels, dtype=object)[np.ix_(group, group)]
    np.fill_diagonal(levels, "0")
    return np.array(orbit_channel(document), dtype=float), group, PrivacyMatrix(levels.tolist())


def oriented(pair, group) -> tuple[int, int, bool]:
    """The class pair ``(a <= b)`` of a table pair and whether its directions are swapped against the orbit classes."""
    (x, x2), _ = pair.pairs
    a, b = int(group[x]), int(group[x2])
    return (a, b, False) if a <= b else (b, a, True)


def classes_of(orbit, a: int, b: int):
    prefix = f"x in class {a}, x' in class {b}"
    return [pair for pair in orbit if pair.name == prefix or pair.name.startswith(prefix + " (")]


def swap(pair) -> dict:
    """A table pair's numbers seen from x' (directions and the test's Y+ / Y- exchanged)."""
    return {"local": pair.local[::-1], "protected": pair.protected[::-1],
            "test_first": pair.test_second[::-1], "test_second": pair.test_first[::-1]}


@pytest.mark.parametrize("name, document", list(documents()), ids=lambda value: value if isinstance(value, str) else "")
def test_every_materialised_pair_is_bounded_by_its_orbit_class(name, document):
    matrix, group, privacy = materialised(document)
    table = channel_pairs(Channel(matrix), privacy)
    orbit = orbit_pairs(check_orbit_structure(document))
    covered = set()
    for pair in table:
        a, b, swapped = oriented(pair, group)
        numbers = swap(pair) if swapped else {"local": pair.local, "protected": pair.protected,
                                               "test_first": pair.test_first, "test_second": pair.test_second}
        candidates = classes_of(orbit, a, b)
        assert candidates, (name, pair.name)
        # one class covers the pair in every field at once: ratio and TV up, shares down
        covering = [c for c in candidates
                    if c.ratio >= pair.ratio * (1 - RTOL) and c.tv[1] >= pair.tv[0]
                    and c.share_all <= pair.share_all * (1 + RTOL) and c.share_class <= pair.share_class * (1 + RTOL)
                    and all(c.local[d] >= numbers["local"][d] * (1 - RTOL) for d in (0, 1))
                    and c.protected == numbers["protected"]]
        assert covering, (name, pair.name)
        covered.add((a, b))
    for a, b in covered:
        members = [p for p in table if oriented(p, group)[:2] == (a, b)]
        candidates = classes_of(orbit, a, b)
        # the local guarantees are the table's maxima, each direction (exact, attained)
        for d in (0, 1):
            table_local = max((swap(p)["local"] if oriented(p, group)[2] else p.local)[d] for p in members)
            assert max(c.local[d] for c in candidates) == pytest.approx(table_local, rel=RTOL), (name, a, b, d)
        # TV, shares and the ratio are attained too: the extremes over the classes are the table's
        assert max(c.tv[1] for c in candidates) == pytest.approx(max(p.tv[1] for p in members), rel=1e-12)
        assert min(c.share_all for c in candidates) == pytest.approx(min(p.share_all for p in members), rel=RTOL, abs=0)
        assert min(c.share_class for c in candidates) == pytest.approx(min(p.share_class for p in members), rel=RTOL)
        assert max(c.ratio for c in candidates) == pytest.approx(max(p.ratio for p in members), rel=RTOL)
        # each class's test is a concrete pair's: its events' masses are some table pair's
        for c in candidates:
            tests = [(swap(p)["test_first"], swap(p)["test_second"]) if oriented(p, group)[2]
                     else (p.test_first, p.test_second) for p in members]
            assert any(np.allclose(c.test_first + c.test_second, f + s, rtol=1e-12, atol=1e-15) for f, s in tests)


@pytest.mark.parametrize("name", ["ldp6", "ldp5-small-eps", "block5-6"])
@pytest.mark.parametrize("n, population", [(1000, None), (3000, 1000)])
def test_central_epsilon_equals_the_materialised_tables(name, n, population):
    """Worst case, and under a population assumption, where block5-6's bound is the clone bound of the
    population (clones+population) and the classic designs' the clone bound over all users: the same
    bounds win at 3,000 users as at 10,000 (a third of the CPU)."""
    document = built(name)
    matrix, _, privacy = materialised(document)
    table = shuffle_guarantee(channel_pairs(Channel(matrix), privacy), n, delta=1e-6, population=population)
    orbit = shuffle_guarantee(orbit_pairs(check_orbit_structure(document)), n, delta=1e-6, population=population)
    assert orbit.epsilon >= table.epsilon * (1 - EPSILON_RTOL)
    assert orbit.epsilon == pytest.approx(table.epsilon, rel=EPSILON_RTOL)
    # the same concrete test: the worst pair of the worst group, the other users' input chosen over every input
    assert orbit.lower == pytest.approx(table.lower, rel=1e-9) and orbit.lower <= orbit.epsilon
    assert 0 < orbit.epsilon < 1  # amplified below the local level eps = 1 (0.3)


def test_a_raised_total_variation_still_bounds_the_exact_worst_case():
    """The class's largest TV stands for smaller ones: w + lambda, lambda of W moved into G0 and G1, post-processes."""
    matrix = np.array([[0.5, 0.25, 0.125, 0.125], [0.25, 0.5, 0.125, 0.125], [0.125, 0.25, 0.5, 0.125]])
    pairs = table_pairs(matrix, None, ["0", "1", "2"])
    largest = max(pair.tv[1] for pair in pairs)
    raised = [dataclasses.replace(pair, tv=(largest, largest)) for pair in pairs]
    assert any(pair.tv[1] < largest * (1 - 1e-3) for pair in pairs)
    exact = exact_worst_epsilon(matrix, 6, 0.05)
    bound = shuffle_guarantee(raised, 6, delta=0.05).epsilon
    assert exact <= shuffle_guarantee(pairs, 6, delta=0.05).epsilon <= bound < max(max(p.local) for p in pairs)


def test_block_design_at_k_43750_matches_a_direct_class_computation():
    """35 blocks of 1,250, eps = 1: the same-block groups against rows built directly for one block."""
    document = build_orbit_package(design_symmetric(ClassStructure.block([1250] * 35, 1.0), materialise=False))
    pairs, description = package_pairs(document)
    assert description.startswith("orbit package, k = 43750, 35 classes")
    same = classes_of(pairs, 0, 0)
    assert len(pairs) == 35 * 34 // 2 + 35 * len(same)
    structure = check_orbit_structure(document)
    o = next(o for o, row in enumerate(structure.high) if row[0])
    n, j = 1250, structure.high[o][0]
    high = structure.cells_high[o][0] * n / (2.0 ** 32 * structure.columns[o] * j)
    low = structure.cells_low[o][0] * n / (2.0 ** 32 * structure.columns[o] * (n - j))
    row = np.where(np.arange(n) < j, high, low)  # rank 0 on columns t = 0..n-1: offset (0 - t) mod n
    row = row[(-np.arange(n)) % n]
    rows = np.stack([np.roll(row, shift) for shift in range(n)])  # rank i: row 0 shifted by i
    tv = 0.5 * np.abs(rows[0] - rows[1:]).sum(axis=1)
    middle = 0.5 * (rows[0] + rows[1:])
    shares = low / middle.max(axis=1)  # the smallest value in every column is low (class 0 only there)
    for c in same:
        assert c.ratio == pytest.approx(high / low, rel=1e-12) and c.share_all == 0.0
        group = np.isclose(shares, c.share_class, rtol=1e-12)
        assert group.any() and c.tv[1] == pytest.approx(tv[group].max(), rel=1e-12)
    assert sum(np.isclose(shares, c.share_class, rtol=1e-12).sum() for c in same) == n - 1
    result = shuffle_guarantee(pairs, 10**5, delta=1e-6, population=2000)
    assert 0 < result.lower <= result.epsilon < 0.2  # local level 1, amplified by 2,000 users of the block
    worst = shuffle_guarantee(pairs, 10**5, delta=1e-6)
    # nobody else need be in the block: one report's level (at delta 1e-6, a hair below the local level)
    assert 0.99 < worst.lower <= worst.epsilon <= max(c.local[0] for c in same)


def test_cli_shuffles_an_orbit_package_and_refuses_a_tampered_one(tmp_path):
    package = tmp_path / "p.json"
    designed = runner.invoke(app, ["design", "--family", "ldp", "--k", "6", "--eps", "1",
                                   "--out", str(tmp_path / "d.csv"), "--package", str(package)])
    assert designed.exit_code == 0, designed.output
    result = runner.invoke(app, ["shuffle", "--package", str(package), "--n", "1000", "--delta", "1e-6", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    document = json.loads(package.read_text())
    matrix, _, privacy = materialised(document)
    table = shuffle_guarantee(channel_pairs(Channel(matrix), privacy), 1000, delta=1e-6)
    assert payload["epsilon"] == pytest.approx(table.epsilon, rel=EPSILON_RTOL)
    assert "orbit package, k = 6" in payload["source"] and payload["epsilon_lower"] <= payload["epsilon"]
    printed = runner.invoke(app, ["shuffle", "--package", str(package), "--n", "1000", "--delta", "1e-6"])
    assert printed.exit_code == 0 and "central epsilon <=" in printed.output
    # raised cells, hash recomputed: the proof fails (exit 1); a stale hash also (exit 1); malformed: exit 2
    forged = copy.deepcopy(document)
    forged["orbits"][0]["cells_high"][0] = str(int(forged["orbits"][0]["cells_high"][0]) + (1 << 28))
    forged["orbits"][0]["cells_low"][0] = str(int(forged["orbits"][0]["cells_low"][0]) - (1 << 28))
    forged["sha256"] = package_digest(forged)
    with pytest.raises(PackageTampered):
        package_pairs(forged)
    for label, edited, code in (("forged", forged, 1), ("stale", dict(forged, sha256=document["sha256"]), 1),
                                ("malformed", {key: value for key, value in document.items() if key != "orbits"}, 2)):
        path = tmp_path / f"{label}.json"
        path.write_text(json.dumps(edited))
        refused = runner.invoke(app, ["shuffle", "--package", str(path), "--n", "1000", "--delta", "1e-6"])
        assert refused.exit_code == code, (label, refused.output)
        assert "Traceback" not in refused.output and len(refused.output.strip().splitlines()) == 1


def test_too_many_rank_offsets_are_refused_in_one_line(tmp_path, monkeypatch):
    import designer.shuffle.orbits as orbits

    document = built("ldp6")
    monkeypatch.setattr(orbits, "MAX_OFFSET_CELLS", 9 * 4)  # one orbit, 5 offsets of 6 members: 45 counts
    with pytest.raises(ValueError, match="classes 0 and 0 meet at 5 rank offsets on 1 orbits"):
        orbit_pairs(check_orbit_structure(document))
    path = tmp_path / "p.json"
    path.write_text(json.dumps(document))
    refused = runner.invoke(app, ["shuffle", "--package", str(path), "--n", "1000", "--delta", "1e-6"])
    assert refused.exit_code == 2 and "rank offsets" in refused.output and "Traceback" not in refused.output


def test_cli_lists_the_protected_pairs_first(tmp_path):
    """15 blocks of 2: 15 same-block classes and 105 unprotected cross-block ones (inf); the protected lead."""
    package = tmp_path / "p.json"
    assert runner.invoke(app, ["design", "--family", "block", "--k", "30", "--blocks", "15", "--eps", "1",
                               "--out", str(tmp_path / "d.json"), "--package", str(package)]).exit_code == 0
    printed = runner.invoke(app, ["shuffle", "--package", str(package), "--n", "1000", "--delta", "1e-6",
                                  "--population", "100"], terminal_width=200)
    assert printed.exit_code == 0, printed.output
    listed = [line for line in printed.output.splitlines() if line.startswith("  x in class")]
    assert "of 120;" in printed.output and len(listed) == 12
    blocks = [re.match(r"  x in class (\d+), x' in class (\d+)", line).groups() for line in listed]
    assert all(first == second for first, second in blocks)  # same block, finite; the inf cross-block pairs follow


def test_recorded_central_guarantee_of_an_orbit_package_is_reproved():
    from designer.shuffle.package import add_shuffle_member, verify_shuffle_member

    document = built("block5-6")  # worst case: nobody else need share the block (one report's level, cheap)
    recorded = add_shuffle_member(document, 1000, 1e-6)
    assert 0.99 < recorded.epsilon < 1
    assert float(document["shuffle"]["epsilon"]) == recorded.epsilon
    assert verify_shuffle_member(document).delta <= 1e-6
    forged = copy.deepcopy(document)
    forged["shuffle"]["epsilon"] = str(recorded.epsilon / 2)
    forged["sha256"] = package_digest(forged)
    with pytest.raises(PackageTampered, match="is not proved"):
        verify_shuffle_member(forged)


def distinct_blocks(r: int) -> dict:
    """Blocks of sizes 2..r+1, each on its own orbit (high on one rank, low on the rest), E = inf across."""
    from designer.deploy.sampler import OrbitStructure

    sizes = list(range(2, 2 + r))
    ranges = [(sum(sizes[:a]), sum(sizes[:a + 1]) - 1, a, 0) for a in range(r)]
    levels = [["1" if a == b else "inf" for b in range(r)] for a in range(r)]
    own = [[1 if a == o else 0 for a in range(r)] for o in range(r)]
    half = [[1 << 19 if a == o else 0 for a in range(r)] for o in range(r)]
    low = [[sizes[a] - 1 if a == o else 0 for a in range(r)] for o in range(r)]
    return OrbitStructure(ranges, sizes, levels, sizes[:], own, low, half, half, 20)


def test_classes_silent_on_the_pairs_orbits_are_one_closed_form_candidate(monkeypatch):
    """r distinct blocks: a class pair's test convolves its own two classes only (the others are 0 there)."""
    import designer.shuffle.orbits as orbits

    structure, calls = distinct_blocks(12), []
    expected = orbits.orbit_pairs(structure)
    real = orbits._other_masses
    monkeypatch.setattr(orbits, "_other_masses", lambda *args: calls.append(args[-1]) or real(*args))
    pairs = orbits.orbit_pairs(structure)
    assert len(pairs) == 12 * 13 // 2 and [dataclasses.astuple(p) for p in pairs] == [
        dataclasses.astuple(p) for p in expected]
    assert all(type(value) is float for p in pairs for value in p.tv + p.test_all + p.test_class)  # not np.float64
    assert len(calls) <= 2 * len(pairs)  # at most the pair's own two classes (before: 12 per pair)
    # a cross-block pair: the other users may hold a silent class (masses exactly 0, never meeting the pair)
    cross = next(p for p in pairs if p.name == "x in class 0, x' in class 1")
    assert cross.test_all == (0.0, 0.0) and math.isinf(cross.ratio)


def test_an_analysis_above_the_work_budget_is_refused_in_one_line(tmp_path, monkeypatch):
    import designer.shuffle.orbits as orbits

    document = built("block5-6")
    monkeypatch.setattr(orbits, "MAX_WORK_UNITS", 4 * orbits.PAIR_UNITS)  # 3 class pairs pass the first check
    with pytest.raises(ValueError, match=r"needs [\d,]+ work units \(\d+ groups of rank offsets to test\)"):
        orbit_pairs(check_orbit_structure(document))
    monkeypatch.setattr(orbits, "MAX_WORK_UNITS", orbits.PAIR_UNITS)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(document))
    refused = runner.invoke(app, ["shuffle", "--package", str(path), "--n", "1000", "--delta", "1e-6"])
    assert refused.exit_code == 2 and "2 classes, 3 class pairs" in refused.output
    assert "Traceback" not in refused.output and len(refused.output.strip().splitlines()) == 1


def test_the_other_users_test_masses_are_exact_counts_times_values():
    """Class 0 never reports where x and x' differ with a positive value: its masses are exactly 0 (not FFT noise),
    so the population route of the lower bound sees that the other users' reports never enter the test."""
    from designer.deploy.sampler import OrbitStructure

    structure = OrbitStructure([(0, 0, 0, 0), (1, 2, 1, 0), (3, 4, 0, 1), (5, 5, 1, 2), (6, 6, 0, 3), (7, 7, 1, 3),
                                (8, 9, 0, 4)], [6, 4], [["60", "inf"], ["60", "inf"]], [12, 1], [[0, 3], [6, 0]],
                               [[2, 1], [0, 4]], [[0, 403575], [507383, 0]], [[541193, 295894], [0, 349107]], 20)
    pairs = {pair.name: pair for pair in orbit_pairs(structure)}
    same = pairs["x in class 0, x' in class 0"]
    assert same.test_all == (0.0, 0.0) and same.test_class == (0.0, 0.0)
    # the two events hold the same counts of z's values: equal sums (FFT noise put them 1 ulp apart)
    other = pairs["x in class 1, x' in class 1"]
    assert other.test_all[0] == other.test_all[1] > 0
