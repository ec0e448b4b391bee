"""Steady-state cost of p10 training steps, torch and burn side by side.

Not part of the default test run (`testpaths` is `tests/`). Run with:

    python3 -m pytest benchmarks --benchmark-enable --benchmark-only

Each benchmark times a 200-step run at the case's sizes through the same
adapter the runner uses (one thread); `extra_info` records the median per-step
time after warm-up from the run's own per-step clock.
"""

import statistics

import pytest

from runner import cases

CASE = cases.load_case(cases.resolve("p10_ema"))
STEPS, WARMUP = 200, 50
PARAMS = {**CASE.params, "steps": STEPS, "checkpoints": [STEPS]}


def adapter(framework: str):
    if framework == "torch":
        from runner.adapters import torch_p10 as module
    else:
        from runner.adapters import burn_p10 as module
    return module


@pytest.mark.benchmark(group="p10_ema: 200 steps")
@pytest.mark.parametrize(
    "framework, mode",
    [
        ("torch", "detach"),
        ("torch", "target"),
        ("burn", "without"),
        ("burn", "target-without"),
        ("burn", "detach"),
    ],
)
def test_p10_steps(benchmark, framework, mode):
    module = adapter(framework)
    samples: list[float] = []

    def run():
        record = module.run(mode, PARAMS, lambda checkpoint: None)
        assert record["outcome"] == "ok"
        samples.extend(record["step_ms"][WARMUP:])

    benchmark.pedantic(run, rounds=3, warmup_rounds=1)
    benchmark.extra_info["median_step_ms_after_warmup"] = statistics.median(samples)
    benchmark.extra_info["framework_mode"] = f"{framework}/{mode}"
