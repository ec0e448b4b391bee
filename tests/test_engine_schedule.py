"""How the check schedules runs: semantic runs side by side, timed runs alone
and repeated in fresh processes, interleaved; what a repeated run records."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from runner import cases, engine, noise
from runner.execute import RunRequest
from runner.model.case import claims_timing
from runner.model.results import RawRun, from_data

CASE_TEXT = """
kind = "p10"
[params]
steps = 600
checkpoints = [1, 600]
[windows]
warmup = 50
reference = 100
last = 100
[[runs]]
framework = "torch"
mode = "detach"
expect = { outcome = "ok", slowdown_ratio = { max = 2.0 } }
[[runs]]
framework = "burn"
mode = "detach"
expect = { outcome = "ok", tracked = true }
[[runs]]
framework = "burn"
mode = "without"
expect = { outcome = "ok", tracked = false }
[[runs]]
framework = "burn"
mode = "target"
expect = { outcome = "ok" }
[[runs]]
framework = "torch"
mode = "target"
expect = { outcome = "ok" }
[[pairs]]
a = "torch/detach"
b = "burn/detach"
differ = ["grows"]
reason = "r"
[[pairs]]
a = "torch/target"
b = "burn/target"
same = ["outcome"]
reason = "r"
"""


@pytest.fixture
def case(tmp_path):
    path = tmp_path / "sched.toml"
    path.write_text(CASE_TEXT)
    return cases.load_case(path)


def test_a_run_is_timed_when_its_case_claims_timing_or_memory(case):
    timed = {spec.key for spec in case.runs if claims_timing(case, spec)}
    # torch/detach: a slowdown bound; burn/detach: a pair claims `grows` of it
    assert timed == {"torch/detach", "burn/detach"}
    assert [p.timed for p in engine.plan([case])] == [True, True, False, False, False]


TIMED = {"torch/detach", "burn/detach"}


class FakeWorkers:
    """An executor that records what ran when, and how many ran at once."""

    def __init__(self, semantic_together: int):
        self.lock = threading.Lock()
        self.running = 0
        self.peak_timed = 0
        self.order: list[tuple[str, bool]] = []
        self.barrier = threading.Barrier(semantic_together, timeout=10)
        self.controls: dict[str, set[str]] = {}
        self.requested_timed: dict[str, set[bool]] = {}

    def __call__(self, request: RunRequest, progress: Any) -> RawRun:
        timed = f"{request.framework}/{request.mode}" in TIMED
        with self.lock:
            self.running += 1
            self.requested_timed.setdefault(f"{request.framework}/{request.mode}", set()).add(request.timed)
            self.order.append((f"{request.framework}/{request.mode}", timed))
            self.controls.setdefault(f"{request.framework}/{request.mode}", set()).add(str(request.controls))
            if timed:
                self.peak_timed = max(self.peak_timed, self.running)
        try:
            if not timed:
                self.barrier.wait()  # every semantic run waits for a partner: they must run at once
            n = len([o for o in self.order if o[0] == f"{request.framework}/{request.mode}"])
            step = 1.0 + 0.1 * n  # each repeat a little slower: medians and ranges are checkable
            return from_data(
                RawRun,
                {
                    "case": request.case,
                    "framework": request.framework,
                    "mode": request.mode,
                    "outcome": "ok",
                    "params": request.params,
                    "step_ms": [step] * 600,
                    "conditions": {"cpu": 1 if timed else None},
                },
            )
        finally:
            with self.lock:
                self.running -= 1


def test_semantic_runs_go_side_by_side_and_timed_runs_alone_interleaved(case):
    workers = FakeWorkers(semantic_together=3)
    records = engine.run_all([case], execute_run=workers, repeat=3, jobs=3)
    semantic = [name for name, timed in workers.order if not timed]
    timed = [name for name, timed in workers.order if timed]
    assert sorted(semantic) == ["burn/target", "burn/without", "torch/target"]
    assert workers.order[:3] == [(n, False) for n in semantic], "semantic runs first"
    assert timed == ["torch/detach", "burn/detach"] * 3, "repeats interleaved across runs"
    assert workers.peak_timed == 1, "a timed run never shares the machine with another of ours"
    assert workers.controls["torch/detach"] == workers.controls["burn/target"] == {"malloc"}
    # what the request says: a timed run is a fresh process; a semantic torch one may be forked
    assert workers.requested_timed == {name: {name in TIMED} for name in workers.requested_timed}
    assert len(records) == 5


def test_a_repeated_run_records_its_first_repeat_and_the_medians(case):
    records = engine.run_all([case], execute_run=FakeWorkers(semantic_together=3), repeat=3, jobs=3)
    run = records[(case.name, "torch/detach")]
    assert [r.reference_median_ms for r in run.repeats] == pytest.approx([1.1, 1.2, 1.3])
    assert run.step_ms[0] == pytest.approx(1.1), "the record is the first repeat"
    m = run.metrics
    assert m.repeats == 3 and m.reference_median_ms == pytest.approx(1.2)
    assert (m.spread["reference_median_ms"].min, m.spread["reference_median_ms"].max) == pytest.approx((1.1, 1.3))
    assert m.spread["reference_median_ms"].relative(m.reference_median_ms) == pytest.approx(0.2 / 1.2)
    assert m.gflops == pytest.approx(m.step_mflop / 1.2)
    cond = run.conditions
    assert cond is not None and cond.timed is True and cond.controls == "malloc" and cond.cpu == 1
    assert all(r.conditions is not None and r.conditions.timed for r in run.repeats)
    once = records[(case.name, "burn/target")]
    assert once.repeats == [] and once.metrics.repeats == 1, "semantic runs run once"
    assert once.conditions is not None and once.conditions.timed is False


def test_one_job_runs_everything_in_turn(case):
    workers = FakeWorkers(semantic_together=1)
    engine.run_all([case], execute_run=workers, jobs=1, controls=noise.Controls(malloc=False, pin=True))
    assert [name for name, _ in workers.order] == [
        "burn/without",
        "burn/target",
        "torch/target",
        "torch/detach",
        "burn/detach",
    ]
    assert workers.controls["torch/detach"] == {"pin"}
    assert workers.controls["burn/target"] == {"none"}, "side by side: never pinned"
