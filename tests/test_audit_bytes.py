"""The audit audits bytes: respelled numbers and kinds are outputs of their own, unless a parser is declared."""

import json

import numpy as np
import pytest
from audit_fixtures import SAMPLERS, SPELLING, audit, classic_E

from designer.audit.lines import ExactReader, NumbersParser, canonical_number, split_lines
from designer.audit.reports import as_report_array, unify_reports


@pytest.fixture
def E3(tmp_path):
    return classic_E(tmp_path / "E3.csv", 3)


def test_canonical_spellings_are_one_to_one():
    assert [canonical_number(text) for text in ("7", "-7", "0", "7.0", "-0.0", "1e-05", "inf")] == [
        7, -7, 0, 7.0, -0.0, 1e-05, float("inf")]
    for other in ("07", "+7", "7 ", " 7", "-0", "7_0", "٧", "7.", "7e0", "1E-05", "nan", "0x7", ""):
        assert canonical_number(other) is None, other
    # every canonical spelling is its value's str/repr, so reading it as a number merges no two lines
    for value in (0, 7, -12, 10**30, 0.1, 7.0, -0.0, 1e300, float("-inf")):
        text = str(value) if isinstance(value, int) else repr(value)
        assert canonical_number(text) == value and type(canonical_number(text)) is type(value)


def test_exact_reader_keeps_every_byte():
    assert split_lines(b"7\r\n07\n\n+7") == ["7\r", "07", "", "+7"]
    reader = ExactReader()
    assert reader.read(["3", "1", "0"], 0, "t").tolist() == [3, 1, 0]  # canonical: numbers
    lines = ["3", "07", "7 ", "+7", "7.0", "7", "7\r"]
    text = reader.read(lines, 1, "t")  # one respelled line: the batch is its exact lines
    assert text.tolist() == lines and len(set(text.tolist())) == len(lines)
    assert reader.describe()["respelled"]["not the canonical spelling of a number"]["reports"] == 4
    joined = unify_reports({0: reader.read(["3", "7"], 0, "t"), 1: text})
    assert joined[0].tolist() == ["3", "7"]  # numbers meeting text are written back as their lines
    # integers and floats of their own batches are two outputs, not one
    floats = reader.read(["7.0", "0.5"], 2, "t")
    assert unify_reports({0: reader.read(["7"], 0, "t"), 2: floats})[0].tolist() == ["7"]
    assert unify_reports({0: reader.read(["7"], 0, "t"), 2: floats})[2].tolist() == ["7.0", "0.5"]


@pytest.mark.parametrize("separator", [",", " ", ", "])
def test_exact_reader_reads_vectors_and_writes_them_back(separator):
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 2, (50, 4)).tolist()
    lines = [separator.join(map(str, row)) for row in rows]
    reader = ExactReader()
    vectors = reader.read(lines, 0, "t")
    assert reader.separator == separator and vectors.shape == (50, 4) and vectors.tolist() == rows
    respelled = lines[:3] + [lines[3] + " "]  # a trailing space: the batch is text
    joined = unify_reports({0: vectors, 1: reader.read(respelled, 1, "t")}, separator=separator)
    assert joined[0].tolist() == lines and joined[1].tolist() == respelled


def test_sampler_kinds_are_outputs_of_their_own():
    assert as_report_array([7, 7.0, 1], 3, "t").tolist() == ["7", "7.0", "1"]
    assert as_report_array([True, 1], 2, "t").tolist() == ["True", "1"]
    assert as_report_array([(1, 0), (1.0, 0)], 2, "t").tolist() == ["(1, 0)", "(1.0, 0)"]
    bits = as_report_array(np.array([[1.0, 0.0], [-0.0, 1.0]]), 2, "t")
    assert bits.dtype == np.float16 and np.signbit(bits[1, 0])  # floats stay floats, -0.0 stays -0.0
    joined = unify_reports({0: np.array([7, 1]), 1: np.array([7.0, 0.5])})
    assert joined[0].tolist() == ["7", "1"] and joined[1].tolist() == ["7.0", "0.5"]


def test_a_float_for_one_input_is_a_leak(E3):
    result = audit("--E", E3, "--sampler", f"{SAMPLERS}:float_for_last", "--arg", "eps=1", "--arg", "k=3",
                   "--reports-per-input", 400, "--seed", 1, "--json", "--no-probe")
    assert result.exit_code == 1, result.output
    witness = json.loads(result.stdout)["violations"][0]
    assert witness["event"].startswith("report = '") and witness["count_x_prime"] == 0


@pytest.mark.parametrize("style", ["07", "7.0"])
def test_respelled_reports_of_one_input_through_a_command(E3, style):
    common = ["--E", E3, "--command", f"{SPELLING} 1 3 {style}", "--reports-per-input", 400, "--seed", 2]
    leaky = audit(*common, "--json")
    assert leaky.exit_code == 1, leaky.output
    payload = json.loads(leaky.stdout)
    witness = payload["violations"][0]
    assert 2 in (witness["x"], witness["x_prime"]) and witness["count_x_prime"] == 0  # outputs of its own
    respelled = payload["reading"]["respelled"]
    if style == "07":  # '07' is no number's canonical spelling; '7.0' is a float's, another output than 7
        example = respelled["not the canonical spelling of a number"]["examples"][0]
        assert example["input"] == 2 and canonical_number(example["line"]) is None
    else:
        assert respelled == {} and witness["event"].startswith("report = '")
    parsed = audit(*common, "--parser", "numbers")
    assert parsed.exit_code == 0, parsed.output
    assert "the audit audits the parsed values, not the bytes; normalisations applied" in parsed.stdout
    honest = audit("--E", E3, "--command", f"{SPELLING} 1 3 plain", "--reports-per-input", 400, "--seed", 2)
    assert honest.exit_code == 0, honest.output


def test_respelled_reports_in_a_file_and_the_declared_parser(E3, tmp_path):
    rng = np.random.default_rng(3)
    spellings = {"07": "{:02d}", "+7": "{:+d}", "7 ": "{} ", "7.0": "{:.1f}"}
    for style, spelling in spellings.items():
        lines = []
        for x in range(3):
            keep = rng.random(600) < np.e / (np.e + 2)
            other = rng.integers(0, 2, 600)
            values = np.where(keep, x, other + (other >= x))
            lines += [f"{x},{spelling.format(float(v) if style == '7.0' else v) if x == 2 else v}" for v in values]
        path = tmp_path / "reports.csv"
        path.write_text("\r\n".join(lines) + "\r\n")  # a Windows file: the \r ending every line tells nothing
        leaky = audit("--E", E3, "--reports", path, "--json", "--seed", 1)
        assert leaky.exit_code == 1, (style, leaky.output)
        assert json.loads(leaky.stdout)["violations"][0]["count_x_prime"] == 0
        parsed = audit("--E", E3, "--reports", path, "--parser", "numbers", "--json", "--seed", 1)
        assert parsed.exit_code == 0, (style, parsed.output)
        applied = json.loads(parsed.stdout)["reading"]["normalisations"]
        assert sum(row["reports"] for row in applied.values()) >= 600 and all(
            example["input"] == 2 for row in applied.values() for example in row["examples"])


def test_numbers_parser_counts_its_normalisations():
    parser = NumbersParser()
    scalars = parser.read(["7", " 7", "07", "7.0", "+7"], 0, "t")
    assert scalars.dtype.kind == "f" and scalars.tolist() == [7.0] * 5
    assert parser.read(["0 1", "0,1"], 1, "t").tolist() == [[0.0, 1.0], [0.0, 1.0]]
    counts = {kind: row["reports"] for kind, row in parser.describe()["normalisations"].items()}
    assert counts == {"surrounding whitespace removed": 1,
                      "numbers read by value whatever their spelling (+7, 07, 7.50)": 2,
                      "floats equal to integers read as those integers (7.0 is 7)": 1,
                      "vector separators read alike (commas and whitespace)": 1}


def test_a_user_parser_is_named_in_the_report(E3, tmp_path):
    module = tmp_path / "parse_int.py"
    module.write_text("def parse(line):\n    return int(line)\n")
    result = audit("--E", E3, "--command", f"{SPELLING} 1 3 07", "--reports-per-input", 300, "--seed", 1,
                   "--parser", f"{module}:parse")
    assert result.exit_code == 0, result.output
    assert f"reports read by --parser {module}:parse: the audit audits the parsed values" in result.stdout
    refused = audit("--E", E3, "--sampler", f"{SAMPLERS}:grr", "--arg", "eps=1", "--arg", "k=3",
                    "--reports-per-input", 100, "--parser", "numbers")
    assert refused.exit_code == 2 and "--parser reads lines of text" in refused.output
