"""`python -m runner check`: exit codes, messages without tracebacks, the JSON file."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runner import cli, frameworks

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "runner", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["check", "--framework", "jax"], "argument --framework: invalid choice: 'jax'"),
        (["check", "--steps", "0"], "argument --steps: must be a positive integer, got 0"),
        (["check", "--steps", "many"], "argument --steps: must be a positive integer, got 'many'"),
        (["check", "--timeout", "-1"], "argument --timeout: must be a number of seconds above 0"),
        (["check", "--mode", "fast"], "--mode: unknown mode 'fast'"),
        (["check", "--steps", "100"], "--steps 100 with"),
        (["check", "p99"], "case 'p99'"),
        (["fuzz", "--budget", "nan"], "argument --budget: must be a number of seconds above 0"),
        (["fuzz", "--timeout", "0"], "argument --timeout: must be a number of seconds above 0"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        ([], "the following arguments are required: command"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(args, fragment, capsys):
    # In this process (the console command's own main); one subprocess run below checks the real exit.
    try:
        code = cli.main(args)
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert fragment in err
    assert "Traceback" not in err


def test_a_bad_argument_exits_2_from_a_real_process():
    out = run_cli("check", "--steps", "0")
    assert out.returncode == 2 and "must be a positive integer" in out.stderr and "Traceback" not in out.stderr


def test_bad_case_file_exits_2_naming_file_line_and_key(tmp_path):
    bad = tmp_path / "broken.toml"
    bad.write_text('kind = "p10"\n[params]\nsteps = = 3\n')
    out = run_cli("check", str(bad))
    assert out.returncode == 2
    assert str(bad) in out.stderr and "line 3" in out.stderr and "Traceback" not in out.stderr

    unknown = tmp_path / "unknown.toml"
    unknown.write_text('kind = "p10"\nspeed = 3\n[[runs]]\nframework = "burn"\nmode = "detach"\n')
    out = run_cli("check", str(unknown))
    assert out.returncode == 2 and "speed: unknown key" in out.stderr


def test_a_bad_weights_tolerance_exits_2_naming_the_key(tmp_path):
    model = (ROOT / "cases" / "model_dqn.toml").read_text()
    assert "\nweights_tolerance = { abs = " in model
    bad = tmp_path / "model_dqn.toml"
    bad.write_text(model.replace("\nweights_tolerance = { abs = ", "\nweights_tolerance = { abs = -", 1))
    out = run_cli("check", str(bad))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert str(bad) in out.stderr and "program.weights_tolerance.abs" in out.stderr, out.stderr


def test_missing_framework_exits_3(monkeypatch, capsys):
    adapter = frameworks.ADAPTERS[("p10", "torch")]
    monkeypatch.setitem(
        frameworks.ADAPTERS,
        ("p10", "torch"),
        frameworks.Adapter(**{**adapter.__dict__, "requirement": "no_such_torch_module"}),
    )
    code = cli.main(["check", "--framework", "torch", "--steps", "400"])
    assert code == 3
    assert "torch is not available here" in capsys.readouterr().err


def test_check_writes_results_json_atomically_and_exits_0(tmp_path):
    out_path = tmp_path / "nested" / "results.json"
    out = run_cli(
        "check",
        "p10_ema",
        "--framework",
        "burn",
        "--mode",
        "without",
        "--mode",
        "target",
        "--steps",
        "400",
        "--json",
        str(out_path),
    )
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads(out_path.read_text())
    assert [p.name for p in out_path.parent.iterdir()] == ["results.json"]  # no temp file left
    assert doc["schema_version"] == 2
    assert {(r["mode"], r["outcome"]) for r in doc["runs"]} == {("without", "ok"), ("target", "panic")}
    target = next(r for r in doc["runs"] if r["mode"] == "target")
    assert target["panic"]["step"] == 3 and "consumed" in target["panic"]["message"]
    without = next(r for r in doc["runs"] if r["mode"] == "without")
    assert len(without["step_ms"]) == 400
    assert [c["step"] for c in without["checkpoints"]] == [1, 50, 100, 200, 400]
    assert all(e["passed"] for e in doc["expectations"])
    # progress on stderr, in the seed's spirit; the table on stdout
    assert "burn without step 200:" in out.stderr and "[1/2]" in out.stderr
    assert "expectations:" in out.stdout and "do not hold" in out.stdout


def test_a_failed_expectation_exits_1(tmp_path):
    case = tmp_path / "wrong.toml"
    case.write_text(
        'kind = "p10"\n[params]\nd_in = 16\nd_out = 16\nbatch = 4\nsteps = 400\n'
        '[[runs]]\nframework = "burn"\nmode = "detach"\n'
        "expect = { tracked = false }\n"  # burn 0.22.1's detach EMA is tracked
    )
    out = run_cli("check", str(case), "-q")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "FAIL  wrong burn/detach tracked: expected false, observed true" in out.stdout


def test_the_exit_codes_are_one_enum():
    """The contract of every command (README): the numbers, and the errors that end with them."""
    from runner.errors import BadInput, ExitCode, Infrastructure, Interrupted, RunnerError

    assert [int(c) for c in ExitCode] == [0, 1, 2, 3]
    assert (RunnerError.exit_code, BadInput.exit_code, Infrastructure.exit_code) == (1, 2, 3)
    assert ExitCode.of_signal(15) == 143 and Interrupted(2).exit_code == 130


@pytest.mark.parametrize(
    "args",
    [
        ["fuzz", "--seed", "9" * 5000],
        ["fuzz", "--seed", "-1"],
        ["fuzz", "--seed", "x" * 5000],
        ["check", "--framework", "j" * 5000],
        ["check", "--steps", "7" * 5000],
        ["check", "--bogus" + "y" * 5000],
        ["frobnicate" + "z" * 5000],
    ],
)
def test_a_bad_argument_value_is_quoted_at_most_80_characters(args, capsys):
    try:
        code = cli.main(args)
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2
    message = err.strip().splitlines()[-1]
    assert len(message) < 300, message
    assert "characters)" in message or "-1" in message


def test_argparse_messages_show_control_characters(capsys):
    try:
        cli.main(["check", "--bogus\x1b]0;pwned\x07"])
    except SystemExit as stop:
        assert stop.code == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "--bogus\\x1b]0;pwned\\x07" in err


def test_a_seed_in_range_is_taken():
    from runner.argtypes import MAX_SEED, seed

    assert seed("0") == 0 and seed(str(MAX_SEED)) == MAX_SEED
