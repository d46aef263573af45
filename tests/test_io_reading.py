"""The reader layer (designer.io): CSV structure, number grammar, fast path = strict path, messages."""

from __future__ import annotations

import csv
import itertools
import math
import sys
from fractions import Fraction

import numpy as np
import pytest

from designer import io as designer_io
from designer.channel import Channel
from designer.exact import parse_rational
from designer.io import InputError, read_channel, read_matrix, read_privacy_matrix, read_table, read_vector
from designer.io import numbers as cell_numbers
from designer.io.fast import fast_float_matrix, has_extreme_numbers
from designer.io.numbers import LEVEL_TOO_LARGE, NON_NEGATIVE, POSITIVE_INTEGER, PRIVACY_LEVEL, PROBABILITY, REAL, parse_float_cell


def write(tmp_path, text, name="x.csv"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, newline="")
    return path


# ----------------------------------------------------------------- structure
def test_rows_are_reported_by_file_line_counting_comments_and_blank_lines(tmp_path):
    path = write(tmp_path, "# E for two symbols\n\n0,1\n# next row is bad\n1,zero\n")
    with pytest.raises(InputError, match=r"x.csv: row 5, column 2: E value 'zero' is not a number >= 0"):
        read_privacy_matrix(path, exact=False)
    path = write(tmp_path, "0.5,0.5\r\n\r\n0.5,0.7\r\n")
    with pytest.raises(InputError, match=r"row 3 sums to 1.2"):
        read_channel(path, exact=False)  # the fast path finds the line again for the message


def test_a_field_over_the_csv_limit_is_one_line_naming_its_row_and_the_limit_is_unchanged(tmp_path):
    limit = csv.field_size_limit()
    path = write(tmp_path, "0.5,0.5\n0.5," + "1" * 140_000 + "\n")
    for exact in (False, True):
        with pytest.raises(InputError) as caught:
            read_channel(path, exact=exact)
        assert str(caught.value).endswith("x.csv: row 2: a value is longer than 131,072 characters (the CSV field limit); is this a channel file?")
    assert csv.field_size_limit() == limit == 131_072


@pytest.mark.parametrize("text, row", [('0.5,0.5\n"0.5,0.5\n0.5,0.5\n', 2), ('0.5,0.5\n0.5,"0.5\n', 2), ('"a,b\n', 1)])
def test_an_unterminated_quote_never_swallows_the_rest_of_the_file(tmp_path, text, row):
    with pytest.raises(InputError, match=rf"row {row}: a quoted value is not closed on its line"):
        read_table(write(tmp_path, text), "records")


def test_quoted_cells_bom_crlf_and_lone_cr_are_read(tmp_path):
    expected = [[0.5, 0.5], [0.25, 0.75]]
    for text in ['"0.5", 0.5\n0.25,"0.75"\n', "\ufeff0.5,0.5\r\n0.25,0.75\r\n", "0.5,0.5\r0.25,0.75\r"]:
        path = write(tmp_path, text.encode("utf-8"))
        for exact in (False, True):
            assert read_channel(path, exact=exact).matrix.tolist() == expected


@pytest.mark.parametrize(
    "data, message",
    [
        (b"0.5,0.5\x00\n", "is binary, not CSV text (it contains NUL bytes)"),
        (b"\xff\xfe0\x00.\x005\x00", "is binary"),
        (b"0.5,\xe9\n", "is not UTF-8 text (byte 4 is 0xe9)"),
        (b"", "the channel file has no rows"),
        (b"# only a comment\n\n,,\n", "the channel file has no rows"),
        (b"0.5,0.5\n0.5\n", "row 2 has 1 values, expected 2 like the first row (ragged CSV)"),
    ],
)
def test_unreadable_files_are_one_line(tmp_path, data, message):
    with pytest.raises(InputError) as caught:
        read_channel(write(tmp_path, data), exact=False)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_folder_and_a_device_are_refused_at_once(tmp_path):
    with pytest.raises(InputError, match="cannot read the E file"):
        read_privacy_matrix(tmp_path, exact=False)
    with pytest.raises(InputError, match="is binary"):
        read_privacy_matrix("/dev/zero", exact=False)


# -------------------------------------------------------------- number grammar
@pytest.mark.parametrize("text", ["1/2/4", "1//2", "/2", "2/", "1/0", "nan", "0x10", "1_0", "١", "--1", "1e", ".", "inf"])
def test_parse_rational_refuses_what_is_not_one_number(text):
    with pytest.raises(ValueError):
        parse_rational(text)


def test_a_nested_fraction_is_an_error_not_one_over_a_half(tmp_path):
    """``1/2/4`` was read as 1/(2/4) = 2 by every reader."""
    path = write(tmp_path, "0,1/2/4\n1,0\n")
    for exact in (False, True):
        with pytest.raises(InputError, match=r"row 1, column 2: E value '1/2/4' is not .* \(a fraction has one '/': write p/q\)"):
            read_privacy_matrix(path, exact=exact)


def test_numbers_beyond_python_int_string_limit_are_read_exactly():
    limit = sys.get_int_max_str_digits()
    assert parse_rational("1e-30000") == Fraction(1, 10**30000)
    assert parse_rational("1/1" + "0" * 5000) == Fraction(1, 10**5000)
    assert parse_rational("7" * 6000 + "/3") == Fraction(7 * (10**6000 - 1) // 9, 3)  # 6,000 sevens
    assert parse_rational("-12.5e-3") == Fraction(-1, 80)
    assert sys.get_int_max_str_digits() == limit  # the interpreter-wide limit is not touched
    with pytest.raises(ValueError, match="exponent beyond 200,000"):
        parse_rational("1e-999999999")


def test_every_short_cell_reads_the_same_on_the_fast_and_the_strict_path():
    """Exhaustive over 4-character cells: the C parser accepts nothing the strict grammar refuses, with equal values."""
    alphabet = ["0", "1", ".", "e", "-", "+", " ", "i", "n", "f"]
    for rule in (REAL, PRIVACY_LEVEL):
        for length in range(1, 5):
            for chars in itertools.product(alphabet, repeat=length):
                cell = "".join(chars)
                fast = fast_float_matrix(f"{cell},1\n".encode(), rule)
                if fast is None:
                    continue
                value, reason = parse_float_cell(cell.strip(), rule)
                assert reason is None and fast[0][0, 0] == value, cell
                assert math.copysign(1, fast[0][0, 0]) == math.copysign(1, value), cell


def test_random_floats_round_trip_on_the_fast_path(tmp_path):
    rng = np.random.default_rng(1)
    matrix = rng.dirichlet(np.ones(40), size=30) * 10.0 ** rng.integers(-30, 30, size=(30, 1))
    path = write(tmp_path, "\n".join(",".join(repr(v) for v in row) for row in matrix.tolist()) + "\n")
    assert fast_float_matrix(path.read_bytes(), NON_NEGATIVE) is not None
    assert np.array_equal(read_matrix(path, "loss"), matrix)
    assert np.array_equal(read_matrix(path, "loss"), [[float(v) for v in row.split(",")] for row in path.read_text().split()])


def test_extreme_numbers_send_the_file_to_the_strict_reader():
    assert not has_extreme_numbers(b"0.5,1e-99\n1e+99,0\n")
    assert has_extreme_numbers(b"0.5,1e-100\n")
    assert has_extreme_numbers(b"0." + b"0" * 120 + b"1,1\n")
    assert fast_float_matrix(b"1e-400,1\n", PROBABILITY) is None  # a zero that is not written 0
    assert fast_float_matrix(b"0,1\n", PROBABILITY) is not None


# ----------------------------------------------------------- what each file accepts
@pytest.mark.parametrize(
    "reader, text, message",
    [
        (lambda p: read_channel(p, exact=False), "0.5,0.5\n-1e-300,1\n", "row 2, column 1: probability '-1e-300' is negative"),
        (lambda p: read_channel(p, exact=True), "0.5,0.5\n-1e-300,1\n", "row 2, column 1: probability '-1e-300' is negative"),
        (lambda p: read_matrix(p, "loss"), "0,1\n-1e-300,0\n", "row 2, column 1: loss value '-1e-300' is negative"),
        (lambda p: read_vector(p, "distribution"), "0.5,0.5,-1e-300\n", "row 1, column 3: distribution value '-1e-300' is negative"),
        (lambda p: read_vector(p, "prior"), "0.5\n-0.5e-320\n", "row 2, column 1: prior value '-0.5e-320' is negative"),
        (lambda p: read_vector(p, "block sizes", POSITIVE_INTEGER), "2,1.5\n", "row 1, column 2: block sizes value '1.5' is not an integer"),
        (lambda p: read_vector(p, "block sizes", POSITIVE_INTEGER), "2,0\n", "row 1, column 2: block sizes value '0' must be > 0"),
        (lambda p: read_matrix(p, "loss"), "0,inf\n", "row 1, column 2: loss value 'inf' is infinite, which is not allowed here"),
        (lambda p: read_matrix(p, "loss"), "0,1e400\n", "row 1, column 2: loss value '1e400' is too large for a double-precision float"),
        (lambda p: read_matrix(p, "distance", allow_infinite=True), "0,-inf\n", "row 1, column 2: distance value '-inf' is not a number >= 0 or inf"),
        (lambda p: read_privacy_matrix(p, exact=False), "0,1e400\n1,0\n", "row 1, column 2: E value '1e400' " + LEVEL_TOO_LARGE),
    ],
)
def test_each_file_refuses_its_bad_values_naming_row_column_and_value(tmp_path, reader, text, message):
    with pytest.raises(InputError) as caught:
        reader(write(tmp_path, text))
    assert str(caught.value) == f"{tmp_path / 'x.csv'}: {message}"


def test_workload_and_strategy_matrices_may_hold_negative_entries(tmp_path):
    """A linear query (W) or strategy row (A) may subtract counts (metric-ldp-range-counting.md, Section III)."""
    path = write(tmp_path, "1,-1,0\n0,1,-1e-300\n")
    assert read_matrix(path, "workload", rule=REAL).tolist() == [[1, -1, 0], [0, 1, -1e-300]]


def test_negative_zero_is_zero(tmp_path):
    path = write(tmp_path, "-0.0,1\n0.5,0.5\n")
    for exact in (False, True):
        matrix = read_channel(path, exact=exact).matrix
        assert matrix[0, 0] == 0 and math.copysign(1, matrix[0, 0]) == 1


# ----------------------------------------------------------------- one parse only
def test_float_mode_parses_a_clean_file_once_in_c_and_builds_no_fraction(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    Q = rng.dirichlet(np.ones(6), size=6)
    path = write(tmp_path, "# labels: a,b,c,d,e,f\n" + "\n".join(",".join(map(repr, row)) for row in Q.tolist()) + "\n")
    e_path = write(tmp_path, "0,inf,1,1,1,1\n" + "\n".join(",".join("0" if i == j else "20" for j in range(6)) for i in range(1, 6)) + "\n", "E.csv")

    def forbidden(*_args, **_kwargs):
        raise AssertionError("the strict cell parser ran on a clean numeric file")

    monkeypatch.setattr(cell_numbers, "parse_float_cell", forbidden)
    monkeypatch.setattr("designer.io.reading.parse_float_cell", forbidden)
    monkeypatch.setattr("designer.channel.parse_rational", forbidden)
    created = []
    original_new = Fraction.__new__
    monkeypatch.setattr(Fraction, "__new__", lambda cls, *a, **k: created.append(a) or original_new(cls, *a, **k))
    channel = read_channel(path, exact=False)
    privacy = read_privacy_matrix(e_path, exact=False)
    assert np.array_equal(channel.matrix, Q) and channel.input_labels == tuple("abcdef") and not channel.is_exact
    assert privacy.epsilon[0, 1] == math.inf and created == []


def test_channel_takes_parsed_fractions_without_parsing_again(monkeypatch):
    exact = np.array([[Fraction(1, 3), Fraction(2, 3)], [Fraction(1, 2), Fraction(1, 2)]], dtype=object)
    monkeypatch.setattr("designer.channel.parse_rational", lambda *_: pytest.fail("parsed again"))
    channel = Channel(exact.astype(float), exact_matrix=exact)
    assert channel.is_exact and channel.exact_matrix[0, 0] == Fraction(1, 3)
    assert Channel(exact).exact_matrix[1, 1] == Fraction(1, 2)


def test_labels_line_names_rows_and_is_checked(tmp_path):
    assert read_privacy_matrix(write(tmp_path, '# labels: "a,1",b\n0,1\n1,0\n'), exact=False).labels == ("a,1", "b")
    with pytest.raises(InputError, match="row 1: 3 labels for 2 rows"):
        read_privacy_matrix(write(tmp_path, "# labels: a,b,c\n0,1\n1,0\n"))
    with pytest.raises(InputError, match="label 'a' appears more than once"):
        read_channel(write(tmp_path, "# labels: a,a\n1,0\n0,1\n"))
    assert designer_io.labels_line(["x", "y,z"]) == '# labels: x,"y,z"'
