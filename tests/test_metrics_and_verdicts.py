"""Metrics from per-step times, and verdicts from metrics: on synthetic records."""

import math

import pytest

from runner import cases
from runner.errors import BadInput
from runner.metrics import compute, measured, properties
from runner.model.results import RawRun, RunRecord, from_data
from runner.verdicts import pair_verdicts, run_verdicts

CASE_TEXT = """
kind = "p10"
[params]
steps = 1000
checkpoints = [1, 100, 500, 1000]
[windows]
warmup = 50
reference = 100
last = 100
[thresholds]
grows_ratio = 2.0
rss_grows_mib_per_1000 = 1.0
[[runs]]
framework = "torch"
mode = "detach"
expect = { outcome = "ok", tracked = false, slowdown_ratio = { max = 1.5 }, rss_growth_mib_per_1000 = { max = 1.0 } }
[[runs]]
framework = "burn"
mode = "detach"
expect = { outcome = "ok", tracked = true, slowdown_ratio = { min = 3 } }
[[runs]]
framework = "burn"
mode = "target"
expect = { outcome = "panic", panic_step = 3, panic_message = "tape has already been consumed" }
[[pairs]]
a = "torch/detach"
b = "burn/detach"
differ = ["tracked", "grows", "rss_grows"]
same = ["outcome"]
reason = "r"
"""


@pytest.fixture
def case(tmp_path):
    path = tmp_path / "syn.toml"
    path.write_text(CASE_TEXT)
    return cases.load_case(path)


def raw(
    step_ms,
    tracked,
    rss_per_step=0.0,
    outcome="ok",
    panic=None,
    framework="torch",
    mode="detach",
    versions=None,
    rss_samples=None,
) -> RawRun:
    checkpoints = [
        {"step": s, "ms_per_step": step_ms[s - 1], "rss_delta_mib": 5.0 + rss_per_step * s, "tracked": tracked}
        for s in (1, 100, 500, 1000)
        if s <= len(step_ms)
    ]
    data = {
        "case": "syn",
        "framework": framework,
        "mode": mode,
        "outcome": outcome,
        "step_ms": step_ms,
        "checkpoints": checkpoints,
        "versions": versions or {},
        "rss_samples": rss_samples or [],
    }
    if panic is not None:
        data["panic"] = panic
    return from_data(RawRun, data)


def record(case, *args, **kwargs) -> RunRecord:
    return measured(raw(*args, **kwargs), case)


def flat(n=1000, ms=1.0):
    return [ms * (1 + 0.05 * math.sin(i)) for i in range(n)]


def growing(n=1000):
    return [1.0 + 0.02 * i for i in range(n)]


def test_flat_run_has_ratio_near_one_and_no_slope(case):
    m = compute(raw(flat(), False), case)
    assert m.slowdown_ratio == pytest.approx(1.0, abs=0.1)
    assert m.slope_ms_per_1000 is not None
    lo, hi = m.slope_ms_per_1000.ci95
    assert lo <= 0 <= hi or abs(m.slope_ms_per_1000.value) < 0.05
    assert m.rss_growth_mib_per_1000 == pytest.approx(0.0, abs=1e-9)
    assert (m.reference_window, m.last_window) == ((51, 150), (901, 1000))


def test_linear_growth_gives_its_ratio_and_slope(case):
    m = compute(raw(growing(), True, rss_per_step=0.003), case)
    # medians: step 100 (index 99.5 -> 1 + 0.02*99.5) and step 950.5
    assert m.slowdown_ratio == pytest.approx((1 + 0.02 * 949.5) / (1 + 0.02 * 99.5), rel=1e-6)
    assert m.slope_ms_per_1000 is not None and m.slope_ms_per_1000.value == pytest.approx(20.0, rel=1e-6)
    assert m.rss_growth_mib_per_1000 == pytest.approx(3.0, rel=1e-6)
    assert m.tracked is True and m.tracked_consistent


def test_an_unfinished_run_has_no_ratio(case):
    m = compute(raw(growing()[:2], True, outcome="panic", panic={"message": "x", "step": 3}), case)
    assert m.slowdown_ratio is None and m.slope_ms_per_1000 is None
    assert m.steps_completed == 2


def test_properties_use_the_case_thresholds(case):
    props = properties(record(case, growing(), True, rss_per_step=0.003), case)
    assert props == {"outcome": "ok", "tracked": True, "grows": True, "rss_grows": True}


def test_run_verdicts_pass_and_fail_on_what_was_observed(case):
    verdicts, _ = run_verdicts(case, case.run("torch/detach"), record(case, flat(), False))
    assert [v.property for v in verdicts] == ["outcome", "tracked", "slowdown_ratio", "rss_growth_mib_per_1000"]
    assert all(v.passed for v in verdicts)
    assert all(v.relation == "expect" and v.b is None and str(v.a) == "torch/detach" for v in verdicts)

    bad = record(case, growing(), True)
    failed = {v.property for v in run_verdicts(case, case.run("torch/detach"), bad)[0] if not v.passed}
    assert failed == {"tracked", "slowdown_ratio"}


def test_panic_verdicts(case):
    msg = "Cannot run backward: graph tape has already been consumed at NodeId(16)."
    target = case.run("burn/target")
    r = record(case, flat(2), True, outcome="panic", panic={"message": msg, "step": 3}, framework="burn", mode="target")
    assert all(v.passed for v in run_verdicts(case, target, r)[0])
    r = record(case, flat(2), True, outcome="panic", panic={"message": msg, "step": 2}, framework="burn", mode="target")
    assert [v.property for v in run_verdicts(case, target, r)[0] if not v.passed] == ["panic_step"]
    ok = record(case, flat(), True, framework="burn", mode="target")
    failed = [v.property for v in run_verdicts(case, target, ok)[0] if not v.passed]
    assert failed == ["outcome", "panic_step", "panic_message"]


def test_pairs_compare_properties_as_structured_verdicts(case):
    t = record(case, flat(), False)
    b = record(case, growing(), True, rss_per_step=0.003, framework="burn")
    verdicts, _ = pair_verdicts(case, {"torch/detach": t, "burn/detach": b})
    assert {(v.relation, v.property): v.passed for v in verdicts} == {
        ("same", "outcome"): True,
        ("differ", "tracked"): True,
        ("differ", "grows"): True,
        ("differ", "rss_grows"): True,
    }
    tracked = next(v for v in verdicts if v.property == "tracked")
    assert (str(tracked.a), str(tracked.b), tracked.observed) == (
        "torch/detach",
        "burn/detach",
        {"a": False, "b": True},
    )
    # If burn behaved like torch, every "differ" would fail.
    verdicts, _ = pair_verdicts(case, {"torch/detach": t, "burn/detach": t})
    assert [v.check for v in verdicts if not v.passed] == [
        "pair differ: tracked",
        "pair differ: grows",
        "pair differ: rss_grows",
    ]
    assert all(v.reason == "r" and v.subject == "torch/detach ~ burn/detach" for v in verdicts)


def test_dense_rss_samples_are_preferred_to_checkpoints(case):
    r = raw(flat(), False, rss_per_step=0.0, rss_samples=[[s, 0.002 * s] for s in range(25, 1001, 25)])
    assert compute(r, case).rss_growth_mib_per_1000 == pytest.approx(2.0, rel=1e-6)


def test_burn_versions_limit_expectations_and_pairs(tmp_path):
    text = CASE_TEXT.replace(
        'expect = { outcome = "panic", panic_step = 3,',
        'expect = { burn_versions = ">=0.22.0", outcome = "panic", panic_step = 3,',
    ).replace('same = ["outcome"]', 'same = ["outcome"]\nburn_versions = "<0.23.0"')
    path = tmp_path / "v.toml"
    path.write_text(text)
    case = cases.load_case(path)
    old = record(case, flat(), True, framework="burn", mode="target", versions={"burn": "0.21.0"})
    verdicts, skipped = run_verdicts(case, case.run("burn/target"), old)
    assert verdicts == [] and skipped[0].burn_versions == ">=0.22.0" and skipped[0].burn == "0.21.0"

    t = record(case, flat(), False)
    new = record(case, growing(), True, framework="burn", versions={"burn": "0.23.1"})
    verdicts, skipped = pair_verdicts(case, {"torch/detach": t, "burn/detach": new})
    assert verdicts == [] and skipped[0].subject == "torch/detach ~ burn/detach"
    new = record(case, growing(), True, framework="burn", versions={"burn": "0.22.1"})
    verdicts, skipped = pair_verdicts(case, {"torch/detach": t, "burn/detach": new})
    assert len(verdicts) == 4 and skipped == []
    # A pre-release sorts before its release (SemVer), so 0.23.0-pre.1 is still "<0.23.0".
    pre = record(case, growing(), True, framework="burn", versions={"burn": "0.23.0-pre.1"})
    assert len(pair_verdicts(case, {"torch/detach": t, "burn/detach": pre})[0]) == 4


def test_burn_versions_are_validated(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(CASE_TEXT.replace('reason = "r"', 'reason = "r"\nburn_versions = "newer than 0.22"'))
    with pytest.raises(BadInput, match=r"pairs\[0\]\.burn_versions: not a version requirement"):
        cases.load_case(path)
