"""Block Hadamard response packages: parameters + exact structural proof, exact samplers (Python and Node)."""

import json
import subprocess
from decimal import Decimal, getcontext
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.cli import app
from designer.deploy.package import SCHEMA_PATH
from designer.deploy.sampler import HadamardSampler, PackageTampered, package_digest
from designer.deploy.structured import build_hadamard_package, largest_coin, verify_hadamard_package
from designer.deploy.vectorised import VectorisedSampler
from designer.exact import ExactEpsilon
from designer.mechanisms import BlockHadamardResponse
from deploy_fixtures import P_VALUE_FLOOR, chi_square_p_value, wrong_row

runner = CliRunner()
CLIENT = Path(__file__).resolve().parent.parent / "designer" / "deploy" / "js" / "ldp-client.mjs"
DRIVER = Path(__file__).resolve().parent / "js" / "sample_counts.mjs"


def test_gowalla_sized_package_is_built_and_proved_without_a_table(tmp_path):
    from jsonschema import Draft202012Validator

    out = tmp_path / "hr.json"
    written = runner.invoke(app, ["package-hadamard", "--block-sizes", "1750*25", "--eps", "log(3)", "--out", str(out)])
    assert written.exit_code == 0, written.output
    document = json.loads(out.read_text())
    Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(document)
    assert document["coin"] == str(3 * 2**30)  # e^eps / (1 + e^eps) = 3/4 exactly
    verified = runner.invoke(app, ["verify-package", str(out)])
    assert verified.exit_code == 0 and "k = 43750" in verified.stdout and "51200 outputs" in verified.stdout


@pytest.mark.parametrize("epsilon", ["1", "1/3", "log(5/2)", "2.5"])
def test_coin_is_the_largest_integer_within_exp_epsilon(epsilon):
    getcontext().prec = 60
    level = ExactEpsilon.parse(epsilon)
    exp = Decimal(level.exp_value.numerator) / Decimal(level.exp_value.denominator) if level.exp_value else (
        Decimal(level.value.numerator) / Decimal(level.value.denominator)).exp()
    total = 2**32
    coin = largest_coin(level, 32)
    assert Decimal(coin) / Decimal(total - coin) <= exp < Decimal(coin + 1) / Decimal(total - coin - 1)


def test_stdlib_sampler_realises_the_certified_channel():
    document = build_hadamard_package([3, 5], "1")
    sampler = HadamardSampler(document, sha256=document["sha256"])
    total, coin = 2**32, int(document["coin"])
    reference = BlockHadamardResponse([3, 5], 1.0).channel().matrix  # which outputs are in S_x
    for x in (1, 6):
        block = slice(0, 4) if x < 3 else slice(4, 12)
        inside = reference[x, block] > reference[x, block].min()
        size = inside.size
        row = [2 * coin if flag else 2 * (total - coin) for flag in inside]  # times 1 / (K 2^b)
        counts = sampler.counts(x, 60_000)
        assert chi_square_p_value(counts, row, size * total) > P_VALUE_FLOOR
        assert chi_square_p_value(counts, wrong_row(row, size * total, 0.03), size * total) < 1e-9


@pytest.mark.parametrize("seed", [None, 9])
def test_vectorised_sampler_realises_the_certified_channel(seed):
    document = build_hadamard_package([3, 5, 1], "1", bits=40)
    sampler = VectorisedSampler(document, seed=seed, sha256=document["sha256"])
    total, coin = 2**40, int(document["coin"])
    reference = BlockHadamardResponse([3, 5, 1], 1.0).channel().matrix
    inputs = np.repeat(np.arange(9), 150_000)
    reports = sampler.sample(inputs)
    for x in (0, 2, 3, 7, 8):
        counts = np.bincount(reports[inputs == x], minlength=sampler.n_outputs)
        row = [0 if value == 0 else 2 * coin if value > reference[x][reference[x] > 0].min() else 2 * (total - coin)
               for value in reference[x]]  # times 1 / (K 2^b); block 3 (size 1) has K = 2
        scale = sum(row)
        assert set(sampler.support(x).tolist()) == {y for y, value in enumerate(row) if value}
        assert chi_square_p_value(counts, row, scale) > P_VALUE_FLOOR
        assert chi_square_p_value(counts, wrong_row(row, scale, 0.03), scale) < 1e-9
    assert sampler.kind == "block-hadamard" and sampler.n_outputs == 4 + 8 + 2


def test_forged_coin_below_one_half_is_violated():
    """A coin T < 2^(b-1) makes S_x the unlikely half: the ratio is (2^b - T) / T, not T / (2^b - T)."""
    document = build_hadamard_package([3, 5], "1")
    forged = dict(document, coin="1")
    forged["sha256"] = package_digest(forged)
    verification = verify_hadamard_package(forged)
    assert not verification.certified and verification.ratio == 2**32 - 1
    assert "(2^32 - T)/T" in verification.failed[0]


def test_node_sampler_realises_the_certified_channel(tmp_path):
    document = build_hadamard_package([3, 5], "1")
    path = tmp_path / "hr.json"
    path.write_text(json.dumps(document))
    result = subprocess.run(["node", str(DRIVER), str(CLIENT), str(path), "6", "1000000"],
                            capture_output=True, text=True, timeout=120, check=True)
    answer = json.loads(result.stdout)
    assert answer["digest"] == document["sha256"]
    counts = answer["counts"]
    assert sum(counts[:4]) == 0  # block 0's outputs are never reported for a block-1 symbol
    reference = BlockHadamardResponse([3, 5], 1.0).channel().matrix[6, 4:]
    total, coin = 2**32, int(document["coin"])
    row = [2 * coin if value > reference.min() else 2 * (total - coin) for value in reference]
    assert chi_square_p_value(counts[4:], row, 8 * total) > P_VALUE_FLOOR
    assert chi_square_p_value(counts[4:], wrong_row(row, 8 * total, 0.03), 8 * total) < 1e-9


def test_tampered_forged_and_malformed_hadamard_packages(tmp_path):
    document = build_hadamard_package([3, 5], "1")
    edited = dict(document, coin=str(int(document["coin"]) + 1))
    with pytest.raises(PackageTampered):
        HadamardSampler(edited, allow_unauthenticated=True)
    path = tmp_path / "hr.json"
    path.write_text(json.dumps(edited))
    assert runner.invoke(app, ["verify-package", str(path)]).exit_code == 1
    forged = dict(edited, sha256=package_digest(edited))  # one unit more breaks T / (2^b - T) <= e
    assert not verify_hadamard_package(forged).certified
    path.write_text(json.dumps(forged))
    result = runner.invoke(app, ["verify-package", str(path)])
    assert result.exit_code == 1 and "> exp(1)" in result.stderr
    path.write_text(json.dumps(dict(document, coin="0")))
    bad = runner.invoke(app, ["verify-package", str(path)])
    assert bad.exit_code == 2 and bad.stderr.startswith("error: ") and "coin" in bad.stderr
    bad_sizes = runner.invoke(app, ["package-hadamard", "--block-sizes", "3,x", "--eps", "1", "--out", str(path)])
    assert bad_sizes.exit_code == 2
