"""``audit --rounds T``: one client instance per simulated user, asked T times; E is the claimed long-term level."""

from pathlib import Path

from typer.testing import CliRunner

from designer.audit.rounds import joint_report
from designer.cli import app

runner = CliRunner()
CLIENTS = Path(__file__).parent / "fixtures" / "audit" / "longitudinal_clients.py"


def write_E(path: Path, k: int, eps: str) -> Path:
    path.write_text("\n".join(",".join("0" if i == j else eps for j in range(k)) for i in range(k)) + "\n")
    return path


def audit(*arguments):
    return runner.invoke(app, ["audit", *map(str, arguments)])


def test_a_client_that_forgets_its_permanent_response_is_caught(tmp_path):
    """GRR(1) drawn again every round: 20 rounds put count(x) ~ Bin(20, 0.475) against Bin(20, 0.175)."""
    E = write_E(tmp_path / "E.csv", 4, "1")
    forgetful = audit("--E", E, "--sampler", f"{CLIENTS}:forgetful", "--arg", "k=4", "--arg", "eps_inf=1.0",
                      "--rounds", 20, "--reports-per-input", 2000, "--attacks", "none", "--seed", 1)
    assert forgetful.exit_code == 1, forgetful.output
    assert "VIOLATED" in forgetful.stdout and "20 rounds per user" in forgetful.stdout


def test_a_memoizing_client_passes(tmp_path):
    E = write_E(tmp_path / "E.csv", 4, "1")
    memoizing = audit("--E", E, "--sampler", f"{CLIENTS}:memoizing", "--arg", "k=4", "--arg", "eps_inf=1.0",
                      "--arg", "eps_1=0.5", "--rounds", 20, "--reports-per-input", 2000, "--attacks", "none",
                      "--seed", 1)
    assert memoizing.exit_code == 0, memoizing.output
    assert "NO VIOLATION FOUND" in memoizing.stdout


def test_rounds_bad_input(tmp_path):
    E = write_E(tmp_path / "E.csv", 3, "1")
    for arguments, message in [
        (["--command", "cat", "--rounds", 3], "--rounds asks client instances"),
        (["--sampler", f"{CLIENTS}:not_a_client", "--arg", "k=3", "--rounds", 3], "not a client"),
        (["--sampler", f"{CLIENTS}:memoizing", "--arg", "k=3", "--arg", "eps_inf=1.0", "--rounds", 0],
         "--rounds must be a positive integer"),
    ]:
        result = audit("--E", E, *arguments, "--reports-per-input", 50, "--seed", 1)
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output, result.output


def test_joint_report_flattens_vector_rounds():
    import numpy as np

    assert joint_report([1, np.int64(2), 3]) == (1, 2, 3)
    assert joint_report([(0, 1), np.array([1, 0])]) == (0, 1, 1, 0)
