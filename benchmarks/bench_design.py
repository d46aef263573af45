"""Benchmarks of the optimal-design engine. Prints tables; figures go to RESULTS.md.

Run: .venv/bin/python benchmarks/bench_design.py   (about 3-5 minutes on 2 cores)
     .venv/bin/python benchmarks/bench_design.py --large-grid 20   (adds ~3-4 minutes)

A. Classic LDP k = 8..16: closed-form vertices vs cdd enumeration, LP, end to end.
B. Random graph metrics: Watts-Strogatz k = 8, 10 and sparse (tree + k/4 edges) k = 8..14: cdd
   enumeration (row orders), LP.
C. Block E, 4 blocks of 8 (k = 32), end to end, vs one block and vs one LP over all blocks.
D. Expected-loss LP on L1 grids: graph-edge constraints vs all pairs; Clarabel vs HiGHS.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import timed

from designer.cone import Cone
from designer.design.expected_loss import design_expected_loss
from designer.design.vertex import column_utility, design_by_vertices
from designer.spec import PrivacyMatrix
from solvers.linear import solve_vertex_lp
from solvers.vertices import enumerate_cone_rays, uniform_ratio_cone_rays


def random_metric(k: int, seed: int = 0, family: str = "ws4") -> PrivacyMatrix:
    """Shortest paths on a random connected graph, edge weights U(0.5, 1.5).

    ``"ws4"``: a connected Watts-Strogatz graph (ring of 4 neighbours, rewired, 2 k edges);
    ``"sparse"``: a random labelled tree plus ``k // 4`` random extra edges.
    """
    rng = np.random.default_rng(seed)
    if family == "ws4":
        graph = nx.connected_watts_strogatz_graph(k, 4, 0.5, seed=seed)
    else:
        graph = nx.random_labeled_tree(k, seed=seed)
        while graph.number_of_edges() < k - 1 + k // 4:
            u, v = rng.choice(k, 2, replace=False)
            graph.add_edge(int(u), int(v))
    for u, v in graph.edges:
        graph[u][v]["weight"] = float(rng.uniform(0.5, 1.5))
    return PrivacyMatrix.from_graph(graph, 1.0)


def grid_loss(n: int) -> np.ndarray:
    cells = np.array(list(np.ndindex(n, n)))
    return np.abs(cells[:, None, :] - cells[None, :, :]).sum(axis=2).astype(float)


def section_classic() -> None:
    print("\nA. classic LDP, eps = 1, uniform prior (median of 3; cdd only where it takes seconds)")
    print(f"{'k':>3} {'vertices':>9} {'closed form s':>14} {'cdd float s':>12} {'LP s':>8} {'design s':>9} {'I (nats)':>9}")
    for k in (8, 10, 12, 14, 16):
        privacy = PrivacyMatrix.classic(k, 1.0)
        closed, rays = timed(lambda: uniform_ratio_cone_rays(k, np.e), 3)
        cdd_text = "-"
        if k <= 12:
            rows = Cone.from_privacy(privacy).components[0].inequalities()
            enumerated, found = timed(lambda: enumerate_cone_rays(rows), 3)
            assert found.n_vertices == rays.shape[0]
            cdd_text = f"{enumerated:.3f}"
        values = column_utility("mutual-information", np.full(k, 1 / k))(rays.T)
        lp, _ = timed(lambda: solve_vertex_lp(rays, values, np.ones(k)), 3)
        total, result = timed(lambda: design_by_vertices(privacy), 3)
        assert result.certified
        print(f"{k:>3} {rays.shape[0]:>9} {closed:>14.4f} {cdd_text:>12} {lp:>8.3f} {total:>9.3f} {result.objective:>9.5f}")


def section_metric() -> None:
    print("\nB. random graph metrics, cdd float enumeration (one run each; budget 600 s per enumeration)")
    print(f"{'graph':>10} {'k':>3} {'pairs':>6} {'vertices':>9} {'UBT bound':>10} {'row order':>11} {'cdd s':>8} {'LP s':>7}")
    all_orders = (None, "lex_min", "min_index", "max_cutoff")
    cases = [("ws4", 8, all_orders), ("ws4", 10, all_orders)]
    cases += [("sparse", k, (None, "lex_min", "min_index")) for k in (8, 10, 12, 14)]
    for name, k, orders in cases:
        privacy = random_metric(k, family=name)
        component = Cone.from_privacy(privacy).components[0]
        for order in orders:
            start = time.perf_counter()
            try:
                found = component.vertices(row_order=order, max_seconds=600)
            except ValueError as error:
                print(f"{name:>10} {k:>3} {len(component.pairs):>6} {'-':>9} {component.estimated_vertices():>10} "
                      f"{order or 'default':>11}   {error}")
                continue
            seconds = time.perf_counter() - start
            values = column_utility("mutual-information", np.full(k, 1 / k))(found.vertices.T)
            lp, _ = timed(lambda: solve_vertex_lp(found.vertices, values, np.ones(k)), 1)
            print(
                f"{name:>10} {k:>3} {len(component.pairs):>6} {found.n_vertices:>9} {component.estimated_vertices():>10} "
                f"{order or 'default':>11} {seconds:>8.3f} {lp:>7.3f}"
            )


def section_blocks() -> None:
    print("\nC. block E (eps = 1), random prior, median of 5")
    prior = np.random.default_rng(0).dirichlet(np.ones(32))
    privacy = PrivacyMatrix.block([8, 8, 8, 8], 1.0)
    total, result = timed(lambda: design_by_vertices(privacy, prior=prior), 5)
    assert result.certified
    one_block, _ = timed(lambda: design_by_vertices(PrivacyMatrix.classic(8, 1.0)), 5)
    padded = []
    for found in Cone.from_privacy(privacy).vertices():
        block = np.zeros((found.n_vertices, 32))
        block[:, found.symbols] = found.vertices
        padded.append(block)
    padded = np.vstack(padded)
    values = column_utility("mutual-information", prior)(padded.T)
    joint, joint_result = timed(lambda: solve_vertex_lp(padded, values, np.ones(32)), 5)
    assert abs(joint_result.objective - result.objective) < 1e-10
    print(f"  4 blocks of 8 (k=32): {result.n_vertices} vertices, design {total:.3f} s, I = {result.objective:.5f}")
    print(f"  one block of 8 (k=8): design {one_block:.3f} s  -> ratio {total / one_block:.2f}")
    print(f"  one LP over all {padded.shape[0]} padded vertices: {joint:.3f} s (same objective)")


def section_expected_loss(large_grids: list[int]) -> None:
    print("\nD. expected-loss LP, L1 grid, eps = 0.5 per step, loss = L1 distance, uniform prior, one run each")
    print("   rows = ratio constraints; times are design_expected_loss end to end (LP + repair + certify)")
    print(f"{'grid':>6} {'k':>4} {'edge rows':>10} {'edges s':>9} {'all-pairs rows':>15} {'all-pairs s':>12} "
          f"{'speed-up':>9} {'HiGHS edges s':>14}")
    for n in (5, 6, 7, 10, *large_grids):
        privacy = PrivacyMatrix.grid_l1((n, n), 0.5)
        loss = grid_loss(n)
        edges, edge_result = timed(lambda: design_expected_loss(privacy, loss), 1)
        assert edge_result.certified
        edge_rows = int(edge_result.methods[0].split(", ")[1].split()[0])
        full_rows = (n * n) * (n * n - 1) * (n * n)
        full_text, ratio_text, highs_text, gap_text = "not run", "", "not run", ""
        if n <= 10:
            full, full_result = timed(lambda: design_expected_loss(privacy, loss, constraints="all-pairs"), 1)
            assert full_result.certified and abs(full_result.objective - edge_result.objective) < 1e-8
            full_text, ratio_text = f"{full:.2f}", f"{full / edges:.1f}x"
        if n <= 10:
            highs, highs_result = timed(lambda: design_expected_loss(privacy, loss, backend="highs"), 1)
            # Clarabel designs with E shrunk by 1e-6 (INTERIOR_POINT_SHRINK): within ~1e-5 of HiGHS's optimum
            assert highs_result.certified and abs(highs_result.objective / edge_result.objective - 1) < 1e-5
            highs_text = f"{highs:.2f}"
            gap_text = f", +{edge_result.objective / highs_result.objective - 1:.1e} vs HiGHS"
        print(f"{n}x{n:<3} {n * n:>4} {edge_rows:>10} {edges:>9.2f} {full_rows:>15} {full_text:>12} {ratio_text:>9} "
              f"{highs_text:>14}   loss {edge_result.objective:.6f}{gap_text}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--large-grid", type=int, action="append", default=[],
        help="also run an n x n expected-loss grid with edge constraints (20 x 20 took 199 s here)",
    )
    arguments = parser.parse_args()
    print("bench_design: optimal-design engine")
    section_classic()
    section_metric()
    section_blocks()
    section_expected_loss(arguments.large_grid)
