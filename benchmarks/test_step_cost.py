"""Steady-state cost of one p10 training step, torch and burn side by side.

Not part of the default test run (`testpaths` is `tests/` and `cases/`). Run with:

    python3 -m pytest benchmarks -n 0 --benchmark-enable --benchmark-only --benchmark-autosave
    python3 -m pytest benchmarks -n 0 --benchmark-enable --benchmark-only --benchmark-compare \
        --benchmark-compare-fail=median:25%

Each framework and mode runs in its own process (`benchmarks/stepper.py`),
with the runner's noise controls (one thread, fixed glibc malloc settings,
pinned to one CPU where allowed). After WARMUP steps, each benchmark round is
STEPS steps of the same loop: pytest-benchmark times the rounds, so its
statistics are of STEPS steady-state steps (divide by STEPS for one step);
`extra_info` has the median (and quietest round's) ms per step and the achieved
GFLOP/s beside the core's float32 peak, and the load average: on a loaded
machine a round's wall time includes the time other processes had the core. `--benchmark-autosave` keeps a baseline in
`.benchmarks/`; `--benchmark-compare` (the newest saved run, or a given one)
compares with it, and `--benchmark-compare-fail` fails a slower run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner import noise
from runner.cost import cpu_peak, p10_step_flop
from runner.model.case import P10Params

ROOT = Path(__file__).resolve().parent.parent
STEPPER = Path(__file__).resolve().parent / "stepper.py"
WARMUP, STEPS, ROUNDS, WARMUP_ROUNDS = 100, 50, 30, 2
RUNS = [
    ("torch", "detach"),
    ("torch", "target"),
    ("burn", "without"),
    ("burn", "target-without"),
]


class Stepper:
    """The parent's side of one stepper process (`case`: a program case's, MODE its variant)."""

    def __init__(
        self, framework: str, mode: str, rounds: int, case: str | None = None, warmup: int = WARMUP, steps: int = STEPS
    ):
        env = noise.worker_env(os.environ, noise.Controls(), noise.timed_cpu())
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(STEPPER),
                framework,
                mode,
                str(warmup),
                str(steps),
                str(rounds),
                *([case] if case else []),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            cwd=ROOT,
            env=env,
        )
        self._expect()  # the warm-up is done

    def _expect(self) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError(f"the stepper stopped: {line!r}")

    def round(self) -> None:
        """STEPS steps, timed by the caller."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        self._expect()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def stepper(request: pytest.FixtureRequest) -> Iterator[Stepper]:
    framework, mode = request.param
    s = Stepper(framework, mode, ROUNDS + WARMUP_ROUNDS)
    yield s
    s.close()


@pytest.mark.benchmark(group=f"p10_ema: {STEPS} steady-state steps per round")
@pytest.mark.parametrize("stepper", RUNS, indirect=True, ids=[f"{f}-{m}" for f, m in RUNS])
def test_p10_steady_state_steps(benchmark, stepper: Stepper, request: pytest.FixtureRequest) -> None:
    framework, mode = request.node.callspec.params["stepper"]
    benchmark.pedantic(stepper.round, rounds=ROUNDS, warmup_rounds=WARMUP_ROUNDS, iterations=1)
    per_step_ms = benchmark.stats.stats.median / STEPS * 1e3
    # the quietest round: on a loaded machine the least disturbed estimate of a step
    best_ms = benchmark.stats.stats.min / STEPS * 1e3
    mflop = p10_step_flop(P10Params().model_dump(), mode) / 1e6
    peak = cpu_peak()
    benchmark.extra_info.update(
        {
            "framework_mode": f"{framework}/{mode}",
            "steps_per_round": STEPS,
            "warmup_steps": WARMUP,
            "median_ms_per_step": round(per_step_ms, 4),
            "min_ms_per_step": round(best_ms, 4),
            "step_mflop": round(mflop, 2),
            "gflops": round(mflop / per_step_ms, 1),
            "peak_gflops": round(peak.gflops, 1) if peak else None,
            "load_average": noise.load_average(),
        }
    )
