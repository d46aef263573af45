"""Exact samplers: the stdlib and vectorised clients draw the table's channel (chi-square), a wrong table fails."""

import json

import numpy as np
import pytest

from designer.deploy.package import build_package
from designer.deploy.sampler import PackageTampered, TableSampler
from designer.deploy.table import deployable_table
from designer.deploy.vectorised import VectorisedSampler
from designer.examples import example_path
from designer.io import read_channel, read_privacy_matrix
from deploy_fixtures import P_VALUE_FLOOR, chi_square_p_value, random_tight_channel, run_stdlib_client_alone, wrong_row


@pytest.fixture(scope="module")
def blocks_package() -> dict:
    channel = read_channel(example_path("blocks4_Q.csv"))
    return build_package(deployable_table(channel, read_privacy_matrix(example_path("blocks4_E.csv"))))


@pytest.fixture(scope="module")
def wide_package() -> dict:
    channel, privacy = random_tight_channel(np.random.default_rng(7), 12, 30, blocks=True, exact_levels=True)
    return build_package(deployable_table(channel, privacy))


def check_fit(counts, document, x):
    total = 2 ** document["bits"]
    row = document["table"][x]
    assert chi_square_p_value(counts, row, total) > P_VALUE_FLOOR
    assert chi_square_p_value(counts, wrong_row(row, total), total) < 1e-9  # the test has power


def test_stdlib_client_matches_the_table(blocks_package):
    sampler = TableSampler(blocks_package, sha256=blocks_package["sha256"])
    for x in (0, 3):
        check_fit(sampler.counts(x, 100_000), blocks_package, x)
    assert sampler.report("2") in {"2", "3"}  # block revealed: zeros are never drawn


@pytest.mark.parametrize("seed", [None, 11])
def test_vectorised_client_matches_the_table(wide_package, seed):
    sampler = VectorisedSampler(wide_package, seed=seed, sha256=wide_package["sha256"])
    inputs = np.repeat(np.arange(12), 200_000)
    reports = sampler.sample(inputs)
    for x in (0, 5, 11):
        check_fit(np.bincount(reports[inputs == x], minlength=30), wide_package, x)
    assert ("NOT cryptographic" in sampler.generator_name) == (seed is not None)


def test_vectorised_64_bit_rows(tmp_path):
    channel = read_channel(example_path("grr4_Q.csv"))
    document = build_package(deployable_table(channel, read_privacy_matrix(example_path("ldp4_E.csv")), bits=64))
    sampler = VectorisedSampler(document, sha256=document["sha256"])
    for x in (1, 2):
        check_fit(sampler.counts(x, 400_000), document, x)
    uniform = sampler.uniform_integers(200_000)
    assert uniform.max() > 2**63  # the top bit is used: integers span [0, 2^64)


def test_seeded_simulation_is_reproducible(blocks_package):
    first = VectorisedSampler(blocks_package, seed=3, allow_unauthenticated=True).sample(np.arange(4).repeat(1000))
    second = VectorisedSampler(blocks_package, seed=3, allow_unauthenticated=True).sample(np.arange(4).repeat(1000))
    assert np.array_equal(first, second)
    assert not np.array_equal(VectorisedSampler(blocks_package, allow_unauthenticated=True).sample(np.zeros(1000, dtype=np.int64)), first[:1000])


def test_samplers_refuse_a_tampered_package(blocks_package):
    tampered = json.loads(json.dumps(blocks_package))
    tampered["table"][0][:2] = ["3139872687", "1155094609"]
    with pytest.raises(PackageTampered):
        TableSampler(tampered, allow_unauthenticated=True)
    with pytest.raises(PackageTampered):
        VectorisedSampler(tampered, allow_unauthenticated=True)


def test_stdlib_client_runs_alone_without_numpy(tmp_path, blocks_package):
    (counts_line,), modules_line = run_stdlib_client_alone(
        tmp_path, blocks_package, "mech.json",
        "from sampler import TableSampler\nm = TableSampler.from_file('mech.json', allow_unauthenticated=True)\nprint(m.counts(1, 100000))",
    )
    assert modules_line == "[]"
    check_fit(json.loads(counts_line), blocks_package, 1)
