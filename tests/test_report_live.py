"""`python3 -m runner report CASE` for real: a small case run by real torch and
the real burn probe, twice, the second night compared with the first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SMALL_CASE = """
kind = "p10"
[params]
d_in = 32
d_out = 32
batch = 8
steps = 400
checkpoints = [1, 100, 400]
[windows]
warmup = 20
reference = 100
last = 100
[[runs]]
framework = "torch"
mode = "detach"
expect = { outcome = "ok", tracked = false }
[[runs]]
framework = "burn"
mode = "target"
expect = { outcome = "panic", panic_step = 3 }
[[runs]]
framework = "burn"
mode = "without"
expect = { outcome = "ok", tracked = false }
[[pairs]]
a = "torch/detach"
b = "burn/without"
same = ["outcome", "tracked"]
reason = "without_autodiff() is burn's constant"
"""


def run_report(*args):
    return subprocess.run(
        [sys.executable, "-m", "runner", "report", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_two_nights_of_a_small_case(tmp_path):
    case = tmp_path / "small.toml"
    case.write_text(SMALL_CASE)
    out = tmp_path / "reports"
    first = run_report(case, "--out", out)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "[1/3] small: torch detach" in first.stderr  # progress as `check` prints it
    results = json.loads((out / "results.json").read_text())
    assert [(r["mode"], r["outcome"]) for r in results["runs"]] == [
        ("detach", "ok"),
        ("target", "panic"),
        ("without", "ok"),
    ]
    assert len(results["runs"][2]["step_ms"]) == 400 and all(e["passed"] for e in results["expectations"])

    second = run_report(case, "--out", out)
    history = sorted(p.name for p in (out / "history").iterdir() if p.name != "HISTORY.json")
    assert len(history) == 2 and history[0] < history[1]
    md = (out / "report.md").read_text()
    assert f"compared with `{history[0]}`" in md
    # what the second night says depends on this machine's noise; the exit code must agree with it
    assert second.returncode == (0 if ": nothing changed" in md else 1), md
    assert '<svg class="plot" id="steps-small-' in (out / "report.html").read_text()
