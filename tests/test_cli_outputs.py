"""Output destinations and console safety: every output path is checked before anything is
written (folders, devices, the same file named twice), and user-provided text is printed verbatim."""

import csv
import json
import os
import stat
import threading
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.cli import app
from designer.examples import example_path
from designer.io import InputError, check_destinations, json_writer, matrix_csv_writer, read_channel, write_files

runner = CliRunner()
E_FILE = str(example_path("ldp4_E.csv"))


def awkward(tmp_path: Path, name: str) -> Path:
    """``.../out[/b][foo]:smile:NAME``: rich would read [/b] and [foo] as markup, :smile: as an emoji."""
    folder = tmp_path / "out["
    folder.mkdir(exist_ok=True)
    return folder / f"b][foo]:smile:{name}"


def leftovers(folder: Path) -> list[str]:
    """Temporary files the writer might have left behind."""
    return sorted(path.name for path in folder.rglob(".*.tmp"))


def one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and message.startswith("error: "), message
    return message


def design(*arguments: str):
    return runner.invoke(app, ["design", "--E", E_FILE, *arguments])


# ----------------------------------------------------------------- the writer itself
@pytest.mark.parametrize("second", ["X.csv", "./X.csv", "sub/../X.csv"])
def test_the_same_file_under_another_spelling_is_refused(tmp_path, monkeypatch, second):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    with pytest.raises(InputError, match="each output needs its own file"):
        write_files([("X.csv", matrix_csv_writer([[1.0]])), (second, json_writer({"a": 1}))])
    assert not (tmp_path / "X.csv").exists() and leftovers(tmp_path) == []


def test_symbolic_and_hard_links_to_one_file_are_refused(tmp_path):
    target = tmp_path / "Q.csv"
    target.write_text("old\n")
    (tmp_path / "soft.csv").symlink_to(target)
    os.link(target, tmp_path / "hard.csv")
    dangling = tmp_path / "dangling.csv"
    dangling.symlink_to(tmp_path / "new.csv")
    for other in ("soft.csv", "hard.csv"):
        with pytest.raises(InputError, match="are the same file"):
            check_destinations([target, tmp_path / other])
    with pytest.raises(InputError, match="are the same file"):  # a dangling link names its future target
        check_destinations([tmp_path / "new.csv", dangling])
    assert target.read_text() == "old\n"


@pytest.mark.parametrize("dangling", [False, True])
def test_a_symbolic_link_is_replaced_and_its_target_left_unchanged(tmp_path, dangling):
    """Written beside the link and renamed over it: a link to a file elsewhere (another user's
    file, the installed JavaScript client) can never be overwritten through an output path."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "real.csv"
    if not dangling:
        target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    write_files([(link, matrix_csv_writer([[0.25, 0.75]]))])
    assert not link.is_symlink() and link.read_text() == "0.25,0.75\n" and leftovers(tmp_path) == []
    assert (target.read_text() == "old\n") if not dangling else not target.exists()


def test_every_destination_is_checked_before_any_is_staged(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    calls = []

    def writer(handle):
        calls.append(1)
        handle.write("x")

    for bad, message in [
        (folder, "is a folder, not a file"),
        (tmp_path / "missing" / "Q.csv", "the output folder .* does not exist"),
        (tmp_path / ("n" * 300), "file name is longer than the 255 bytes"),
    ]:
        with pytest.raises(InputError, match=message):
            write_files([(tmp_path / "first.csv", writer), (bad, writer)])
    assert calls == [] and not (tmp_path / "first.csv").exists() and leftovers(tmp_path) == []


def test_a_long_but_legal_name_is_staged_under_a_shortened_temporary_name(tmp_path):
    path = tmp_path / ("q" * 250 + ".csv")  # 254 bytes: legal, but ".NAME.xxxxxxxx.tmp" would not be
    write_files([(path, matrix_csv_writer([[1.0]]))])
    assert path.read_text() == "1.0\n" and leftovers(tmp_path) == []


def test_a_failing_writer_leaves_no_file_and_no_temporary(tmp_path):
    def broken(handle):
        handle.write("half")
        raise ValueError("disk full")

    with pytest.raises(ValueError, match="disk full"):
        write_files([(tmp_path / "a.csv", matrix_csv_writer([[1.0]])), (tmp_path / "b.json", broken)])
    assert list(tmp_path.iterdir()) == []


def test_a_named_pipe_is_written_into_and_stays_a_pipe(tmp_path):
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    received = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_text()))
    reader.start()
    write_files([(tmp_path / "Q.csv", matrix_csv_writer([[0.5, 0.5]])), (pipe, json_writer({"k": 2}))])
    reader.join(timeout=10)
    assert json.loads(received[0]) == {"k": 2}
    assert stat.S_ISFIFO(os.stat(pipe).st_mode) and (tmp_path / "Q.csv").read_text() == "0.5,0.5\n"


# ------------------------------------------------------------------------ design
def test_design_refuses_out_and_summary_naming_one_file(tmp_path):
    existing = tmp_path / "X"
    existing.write_text("keep me\n")
    for summary in (str(existing), str(tmp_path / "." / "X")):
        message = one_line_error(design("--out", str(existing), "--summary", summary))
        assert "each output needs its own file" in message
    assert existing.read_text() == "keep me\n" and leftovers(tmp_path) == []


def test_design_refuses_a_folder_as_out_or_summary_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "d"
    folder.mkdir()
    assert "d: is a folder" in one_line_error(design("--out", "d"))
    assert "d: is a folder" in one_line_error(design("--out", "Q.csv", "--summary", "d"))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["d"] and list(folder.iterdir()) == []


def test_design_into_dev_null_keeps_the_device_and_writes_the_summary(tmp_path):
    summary = tmp_path / "s.json"
    result = design("--out", os.devnull, "--summary", str(summary))
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    payload = json.loads(summary.read_text())
    assert payload["k"] == 4 and payload["certified"] is True
    # E is classic log(3)-LDP on 4 symbols; the optimum is 4-ary RR (diagonal 1/2, off-diagonal 1/6):
    # I = log 4 - H(1/2, 1/6, 1/6, 1/6)
    assert payload["objective"] == pytest.approx(np.log(4) - (3 / 6) * np.log(6) - 0.5 * np.log(2), abs=1e-9)


def test_design_prints_an_awkward_path_verbatim(tmp_path):
    out = awkward(tmp_path, "Q.csv")
    awkward_e = awkward(tmp_path, "E.csv")
    awkward_e.write_text(Path(E_FILE).read_text())
    result = runner.invoke(app, ["design", "--E", str(awkward_e), "--out", str(out), "--summary", str(out) + ".json"])
    assert result.exit_code == 0, result.output
    assert f"channel written to {out}" in result.stdout.replace("\n", "")
    assert f"summary written to {out}.json" in result.stdout.replace("\n", "")
    assert "b][foo]:smile:E.csv" in result.stdout
    assert read_channel(out).k == 4


# ------------------------------------------------------------ the other commands
def test_spec_prints_an_awkward_path_and_refuses_a_folder(tmp_path):
    out = awkward(tmp_path, "E.csv")
    result = runner.invoke(app, ["spec", "ldp", "--k", "3", "--eps", "0.5", "--out", str(out)])
    assert result.exit_code == 0 and str(out) in result.stdout.replace("\n", "")
    assert np.array_equal(np.genfromtxt(out, delimiter=","), 0.5 * (1 - np.eye(3)))
    assert "is a folder" in one_line_error(runner.invoke(app, ["spec", "ldp", "--k", "3", "--out", str(tmp_path)]))
    assert leftovers(tmp_path) == []


def test_strategy_prints_awkward_paths_and_checks_out_before_designing(tmp_path):
    e_file = awkward(tmp_path, "E.csv")
    e_file.write_text("0,1,2\n1,0,1\n2,1,0\n")
    workload = awkward(tmp_path, "W.csv")
    workload.write_text("1,0,0\n1,1,0\n1,1,1\n")
    out = awkward(tmp_path, "strategy.json")
    result = runner.invoke(app, ["strategy", "--workload", str(workload), "--E", str(e_file), "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = result.stdout.replace("\n", "")
    assert "b][foo]:smile:W.csv workload" in text and f"wrote {out}" in text
    assert json.loads(out.read_text())["certificate"]["verdict"] == "certified"
    folder = tmp_path / "f"
    folder.mkdir()
    refused = runner.invoke(app, ["strategy", "--workload", "prefix", "--E", str(e_file), "--out", str(folder)])
    assert "is a folder" in one_line_error(refused)


def test_simulate_prints_an_awkward_distribution_path_verbatim(tmp_path):
    weights = awkward(tmp_path, "p.csv")
    weights.write_text("1,2,3,4\n")
    result = runner.invoke(app, ["simulate", "--mechanism", "grr", "--k", "4", "--eps", "1", "--n", "1000",
                                 "--dist", str(weights), "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert f"distribution {weights}" in result.stdout.replace("\n", "")


def test_certify_names_an_awkward_input_path_in_its_error(tmp_path):
    channel = awkward(tmp_path, "Q.csv")
    channel.write_text("0.5,0.5\n0.5\n")
    message = one_line_error(runner.invoke(app, ["certify", "--E", E_FILE, "--channel", str(channel)]))
    assert str(channel) in message


@pytest.fixture()
def awkward_records(tmp_path) -> Path:
    """Records whose secret labels look like rich markup and an emoji code."""
    rng = np.random.default_rng(3)
    path = awkward(tmp_path, "records.csv")
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["secret", "public"])
        for s, u in zip(rng.integers(0, 2, 400), rng.integers(0, 2, 400)):
            writer.writerow([["[/b]", "[foo]:smile:"][s], ["a", "b"][u]])
    return path


def test_robust_prints_an_awkward_out_path(awkward_records, tmp_path):
    out = awkward(tmp_path, "Q.csv")
    result = runner.invoke(app, ["robust", "--data", str(awkward_records), "--secret", "secret", "--public", "public",
                                 "--eps", "1", "--protocol", "grr", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.stdout.replace("\n", "")
    assert read_channel(out).k == 4


def test_certify_robust_prints_markup_like_labels_verbatim(awkward_records, tmp_path):
    channel = tmp_path / "identity.csv"
    channel.write_text("\n".join(",".join("1" if i == j else "0" for j in range(4)) for i in range(4)) + "\n")
    result = runner.invoke(app, ["certify-robust", "--data", str(awkward_records), "--secret", "secret",
                                 "--public", "public", "--eps", "1", "--channel", str(channel)])
    assert result.exit_code == 1, result.output  # the identity channel reveals the secret
    text = result.stdout.replace("\n", "")
    assert "s=[/b]" in text and "s'=[foo]:smile:" in text or "s=[foo]:smile:" in text and "s'=[/b]" in text


def test_a_folder_that_refuses_files_is_one_line_naming_the_output_not_the_temporary(tmp_path):
    first = tmp_path / "ok.csv"
    with pytest.raises(InputError, match=r"^/proc/Q.csv: cannot write in the folder /proc \("):
        write_files([(first, matrix_csv_writer([[1.0]])), ("/proc/Q.csv", matrix_csv_writer([[1.0]]))])
    assert list(tmp_path.iterdir()) == []  # the first file was staged, then removed


def test_a_socket_is_refused(tmp_path):
    import socket

    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(InputError, match="is a socket, not a file"):
            check_destinations([path])
    finally:
        server.close()


def test_a_stream_that_fails_leaves_no_file(tmp_path):
    """/dev/full refuses every write (ENOSPC): the regular file staged beside it is never renamed."""
    with pytest.raises(InputError, match=r"^/dev/full: cannot write this output \(No space left"):
        write_files([(tmp_path / "Q.csv", matrix_csv_writer([[1.0]])), ("/dev/full", json_writer({"k": 1}))])
    assert list(tmp_path.iterdir()) == []
    result = design("--out", str(tmp_path / "Q.csv"), "--summary", "/dev/full")
    assert "No space left" in one_line_error(result) and list(tmp_path.iterdir()) == []
