"""Steady-state cost of one training step of each reference model, torch and burn side by side.

Not part of the default test run (`testpaths` is `tests/` and `cases/`). Run with the other
benchmarks:

    python3 -m pytest benchmarks/test_model_step_cost.py -n 0 --benchmark-enable --benchmark-only

The four reference models (`cases/model_*.toml`), each framework in its own process
(`benchmarks/stepper.py` with the case), with the runner's noise controls: torch runs the
variant a porter writes (`port`; the DQN's `copy`), burn the variant that agrees with it
(`fixed`; the DQN's `copy`). After WARMUP iterations of the program's timed loop, each round is
STEPS iterations (an iteration is one training step, or a block of ten for the DQN).
`extra_info` has the median (and quietest round's) ms per training step, torch's FLOP count of
a training step (`runner.program.flops`: matrix products and convolutions, forward and
backward, of the very program that runs; the same count for both frameworks), the achieved
GFLOP/s and its share of the core's float32 peak, and the load average.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence

import pytest
from stepper import program
from test_step_cost import Stepper

from runner import noise
from runner.cost import cpu_peak
from runner.program import flops
from runner.program.ir import Stmt, timed_loop

WARMUP, STEPS, ROUNDS, WARMUP_ROUNDS = 20, 10, 15, 2
RUNS = [
    ("model_mlp", "torch", "port"),
    ("model_mlp", "burn", "fixed"),
    ("model_cnn", "torch", "port"),
    ("model_cnn", "burn", "fixed"),
    ("model_transformer_lm", "torch", "port"),
    ("model_transformer_lm", "burn", "fixed"),
    ("model_dqn", "torch", "copy"),
    ("model_dqn", "burn", "copy"),
]


def training_steps(body: Sequence[Stmt]) -> int:
    """How many training steps (backward passes) one run of `body` makes."""
    n = 0
    for st in body:
        if st.op == "repeat" and st.body is not None:
            n += st.integer("count") * training_steps(st.body)
        elif st.op == "backward":
            n += 1
    return n


@functools.cache
def cost(case: str, mode: str) -> tuple[float, int]:
    """(MFLOP of one iteration of the timed loop, training steps per iteration) of the program
    the steppers run."""
    prog = program(case, mode, WARMUP + 1, [WARMUP + 1])
    loop = timed_loop(prog.body)
    assert loop is not None and loop.body is not None
    count = flops.step_flop(prog)
    assert count is not None, f"{case}/{mode}: torch did not get through an iteration"
    return count / 1e6, max(1, training_steps(loop.body))


@pytest.fixture
def stepper(request: pytest.FixtureRequest) -> Iterator[Stepper]:
    case, framework, mode = request.param
    s = Stepper(framework, mode, ROUNDS + WARMUP_ROUNDS, case=case, warmup=WARMUP, steps=STEPS)
    yield s
    s.close()


@pytest.mark.benchmark(group=f"reference models: {STEPS} steady-state iterations per round")
@pytest.mark.parametrize("stepper", RUNS, indirect=True, ids=[f"{c}-{f}-{m}" for c, f, m in RUNS])
def test_model_steady_state_steps(benchmark, stepper: Stepper, request: pytest.FixtureRequest) -> None:
    case, framework, mode = request.node.callspec.params["stepper"]
    benchmark.pedantic(stepper.round, rounds=ROUNDS, warmup_rounds=WARMUP_ROUNDS, iterations=1)
    mflop, per_iteration = cost(case, mode)
    steps = STEPS * per_iteration
    per_step_ms = benchmark.stats.stats.median / steps * 1e3
    best_ms = benchmark.stats.stats.min / steps * 1e3
    gflops = mflop / per_iteration / per_step_ms
    peak = cpu_peak()
    benchmark.extra_info.update(
        {
            "case_framework_mode": f"{case} {framework}/{mode}",
            "training_steps_per_round": steps,
            "warmup_iterations": WARMUP,
            "median_ms_per_step": round(per_step_ms, 4),
            "min_ms_per_step": round(best_ms, 4),
            "step_mflop": round(mflop / per_iteration, 3),
            "gflops": round(gflops, 2),
            "peak_gflops": round(peak.gflops, 1) if peak else None,
            "of_peak": round(gflops / peak.gflops, 4) if peak else None,
            "load_average": noise.load_average(),
        }
    )
