"""Size, time and number-format corners of the deploy commands and clients.

Each case once ran for minutes, allocated gigabytes or crashed; each must now answer
within seconds with exact results or a one-line error.
"""

import json
import math
from fractions import Fraction

import pytest
from typer.testing import CliRunner

from designer.channel import Channel
from designer.cli import app
from designer.deploy.package import build_package
from designer.deploy.sampler import HadamardSampler
from designer.deploy.structured import build_hadamard_package, largest_coin
from designer.deploy.table import deployable_table
from designer.deploy.vectorised import VectorisedSampler
from designer.exact import ExactEpsilon
from designer.spec import PrivacyMatrix
from deploy_fixtures import P_VALUE_FLOOR, chi_square_p_value

runner = CliRunner()


def invoke(*arguments):
    return runner.invoke(app, [str(argument) for argument in arguments])


def test_sample_package_on_a_block_of_2_31_minus_1_symbols_lists_only_the_outputs_drawn(tmp_path):
    path = tmp_path / "big.json"
    assert invoke("package-hadamard", "--block-sizes", 2**31 - 1, "--eps", "1", "--out", path).exit_code == 0
    result = invoke("sample-package", path, "--input", 12345, "--n", 2000, "--seed", 1, "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["support"] == 2**31 and sum(answer["counts"].values()) == 2000
    assert all(0 <= int(output) < 2**31 for output in answer["counts"])
    text = invoke("sample-package", path, "--input", 12345, "--n", 5)
    assert text.exit_code == 0 and "can report 2147483648 outputs" in text.output
    sampler = HadamardSampler(json.loads(path.read_text()), allow_unauthenticated=True)
    with pytest.raises(ValueError, match="GiB"):
        sampler.counts(0, 10)
    with pytest.raises(ValueError, match="GiB"):
        VectorisedSampler(json.loads(path.read_text()), seed=1, allow_unauthenticated=True).counts(0, 10)


@pytest.mark.parametrize("arguments, message", [
    (["package-hadamard", "--block-sizes", "1*1000000000", "--eps", "1"], "more than 1048576 blocks"),
    (["package-hadamard", "--block-sizes", "3*0", "--eps", "1"], "COUNT must be at least 1"),
    (["package-high-low", "--k", 2**25, "--sensitive", "0-16777215", "--eps", "1"], "more than 1048576 symbols"),
    (["sample-package", "PACKAGE", "--input", "0", "--n", 10**12], "more than 1000000000 reports"),
])
def test_oversized_parameters_are_refused_up_front(tmp_path, arguments, message):
    package = tmp_path / "hr.json"
    package.write_text(json.dumps(build_hadamard_package([3], "1")))
    out = tmp_path / "out.json"
    arguments = [package if argument == "PACKAGE" else argument for argument in arguments]
    result = invoke(*arguments, *([] if arguments[0] == "sample-package" else ["--out", out]))
    assert result.exit_code == 2 and message in result.output and not out.exists()
    assert len(result.output.strip().splitlines()) == 1


def test_a_huge_level_gets_the_largest_coin_without_exp(tmp_path):
    assert largest_coin(ExactEpsilon.parse("1e308"), 32) == 2**32 - 1
    assert largest_coin(ExactEpsilon.parse("33"), 32) == 2**32 - 1  # e^33 > 2^32 - 1
    assert largest_coin(ExactEpsilon.parse("22"), 32) == math.floor(2**32 * math.exp(22) / (1 + math.exp(22)))
    out = tmp_path / "hr.json"
    result = invoke("package-hadamard", "--block-sizes", "3", "--eps", "1e308", "--out", out)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["coin"] == str(2**32 - 1)
    assert invoke("verify-package", out).exit_code == 0


def test_vectorised_client_on_a_64_bit_table_with_a_zero_last_column():
    rows = [[Fraction(1, 2), Fraction(1, 2), Fraction(0)], [Fraction(1, 3), Fraction(2, 3), Fraction(0)],
            [Fraction(1, 4), Fraction(1, 4), Fraction(1, 2)]]
    levels = [["0", "log(2)", "inf"], ["log(2)", "0", "inf"], ["inf", "inf", "0"]]
    document = build_package(deployable_table(Channel(rows), PrivacyMatrix(levels), 64))
    assert document["table"][0][2] == "0" and document["bits"] == 64
    sampler = VectorisedSampler(document, seed=4, sha256=document["sha256"])
    draws = 200_000
    for x in range(3):
        counts = sampler.counts(x, draws)
        assert counts.sum() == draws
        assert chi_square_p_value(counts, document["table"][x], 2**64) > P_VALUE_FLOOR
    assert sampler.counts(0, draws)[2] == 0 and sampler.counts(1, draws)[2] == 0
    # the largest u (2^64 - 1) is the last unit of the last positive entry, never the zero column
    law = sampler._law
    assert law._last.tolist() == [1, 1, 2]


def test_package_refuses_a_channel_beyond_the_stated_tolerance(tmp_path):
    channel = tmp_path / "Q.csv"
    channel.write_text("0.75,0.25\n0.25,0.75\n")
    for excess, code in ((1e-7, 1), (1e-10, 0)):
        level = repr(math.log(3) - excess)
        e_file = tmp_path / "E.csv"
        e_file.write_text(f"0,{level}\n{level},0\n")
        result = invoke("package", "--E", e_file, "--channel", channel, "--out", tmp_path / "mech.json", "--json")
        assert result.exit_code == code, result.output
        if code:
            assert "beyond the tolerance 1e-09" in result.output
        else:
            assert json.loads(result.stdout)["utility"]["rounding"] == "mixed"  # the excess is repaired, then proved
            assert invoke("verify-package", tmp_path / "mech.json").exit_code == 0


def test_a_certifiable_64_bit_table_is_found():
    """A tight channel whose 64-bit directed rounding asks both non-zero entries of a row to round up.

    Above 53 bits the float at-risk test is noise; the 53-bit certified table times 2^11 is a
    64-bit table of the same rational channel, so it must be returned, certified exactly.
    """
    from designer.certify import certify

    rows = [[0, Fraction(279, 745), 0, Fraction(466, 745)], [Fraction(630, 1543), 0, Fraction(913, 1543), 0],
            [0, Fraction(631, 1182), 0, Fraction(551, 1182)], [0, Fraction(75, 668), 0, Fraction(593, 668)]]
    channel = Channel([[Fraction(value) for value in row] for row in rows])
    levels = [["0" if x == y else (
        "inf" if any(rows[x][j] and not rows[y][j] for j in range(4))
        else f"log({max(Fraction(rows[x][j]) / rows[y][j] for j in range(4) if rows[x][j])})") for y in range(4)]
        for x in range(4)]
    privacy = PrivacyMatrix(levels)
    assert certify(channel, privacy, exact=True).margin == 0  # tight on every finite pair
    deployed = deployable_table(channel, privacy, 64)
    assert deployed.table.bits == 64 and all(sum(row) == 2**64 for row in deployed.table.counts)
    assert certify(deployed.table.channel(), privacy, exact=True).certified
    assert float(deployed.loss.mixing_weight) < 1e-12 and deployed.loss.max_total_variation < 1e-12
