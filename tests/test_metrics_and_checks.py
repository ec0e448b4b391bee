"""Metrics from per-step times, and verdicts from metrics: on synthetic records."""

import math
from pathlib import Path

import pytest

from runner import cases
from runner.checks import pair_checks, run_checks
from runner.metrics import compute, properties

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


def record(step_ms, tracked, rss_per_step=0.0, outcome="ok", panic=None):
    checkpoints = [
        {"step": s, "ms_per_step": step_ms[s - 1], "rss_delta_mib": 5.0 + rss_per_step * s, "tracked": tracked}
        for s in (1, 100, 500, 1000) if s <= len(step_ms)
    ]
    return {"outcome": outcome, "panic": panic, "step_ms": step_ms, "checkpoints": checkpoints}


def flat(n=1000, ms=1.0):
    return [ms * (1 + 0.05 * math.sin(i)) for i in range(n)]


def growing(n=1000):
    return [1.0 + 0.02 * i for i in range(n)]


def test_flat_run_has_ratio_near_one_and_no_slope(case):
    m = compute(record(flat(), False), case)
    assert m["slowdown_ratio"] == pytest.approx(1.0, abs=0.1)
    lo, hi = m["slope_ms_per_1000"]["ci95"]
    assert lo <= 0 <= hi or abs(m["slope_ms_per_1000"]["value"]) < 0.05
    assert m["rss_growth_mib_per_1000"] == pytest.approx(0.0, abs=1e-9)
    assert (m["reference_window"], m["last_window"]) == ([51, 150], [901, 1000])


def test_linear_growth_gives_its_ratio_and_slope(case):
    m = compute(record(growing(), True, rss_per_step=0.003), case)
    # medians: step 100 (index 99.5 -> 1 + 0.02*99.5) and step 950.5
    assert m["slowdown_ratio"] == pytest.approx((1 + 0.02 * 949.5) / (1 + 0.02 * 99.5), rel=1e-6)
    assert m["slope_ms_per_1000"]["value"] == pytest.approx(20.0, rel=1e-6)
    assert m["rss_growth_mib_per_1000"] == pytest.approx(3.0, rel=1e-6)
    assert m["tracked"] is True and m["tracked_consistent"]


def test_an_unfinished_run_has_no_ratio(case):
    m = compute(record(growing()[:2], True, outcome="panic"), case)
    assert m["slowdown_ratio"] is None and m["slope_ms_per_1000"] is None
    assert m["steps_completed"] == 2


def test_properties_use_the_case_thresholds(case):
    r = record(growing(), True, rss_per_step=0.003)
    props = properties(r, compute(r, case), case)
    assert props == {"outcome": "ok", "tracked": True, "grows": True, "rss_grows": True}


def test_run_checks_pass_and_fail_on_what_was_observed(case):
    torch_r = record(flat(), False)
    torch_r["metrics"] = compute(torch_r, case)
    verdicts, _ = run_checks(case, case.run("torch/detach"), torch_r)
    assert [v["check"] for v in verdicts] == ["outcome", "tracked", "slowdown_ratio", "rss_growth_mib_per_1000"]
    assert all(v["passed"] for v in verdicts)

    bad = record(growing(), True)
    bad["metrics"] = compute(bad, case)
    failed = {v["check"] for v in run_checks(case, case.run("torch/detach"), bad)[0] if not v["passed"]}
    assert failed == {"tracked", "slowdown_ratio"}


def test_panic_checks(case):
    msg = "Cannot run backward: graph tape has already been consumed at NodeId(16)."
    r = record(flat(2), True, outcome="panic", panic={"message": msg, "step": 3})
    r["metrics"] = compute(r, case)
    assert all(v["passed"] for v in run_checks(case, case.run("burn/target"), r)[0])
    r["panic"] = {"message": msg, "step": 2}
    failed = [v["check"] for v in run_checks(case, case.run("burn/target"), r)[0] if not v["passed"]]
    assert failed == ["panic_step"]
    ok = record(flat(), True)
    ok["metrics"] = compute(ok, case)
    failed = [v["check"] for v in run_checks(case, case.run("burn/target"), ok)[0] if not v["passed"]]
    assert failed == ["outcome", "panic_step", "panic_message"]


def test_pairs_compare_properties(case):
    t = record(flat(), False)
    b = record(growing(), True, rss_per_step=0.003)
    for r in (t, b):
        r["metrics"] = compute(r, case)
    verdicts, _ = pair_checks(case, {"torch/detach": t, "burn/detach": b})
    assert {v["check"]: v["passed"] for v in verdicts} == {
        "pair same: outcome": True, "pair differ: tracked": True,
        "pair differ: grows": True, "pair differ: rss_grows": True,
    }
    # If burn behaved like torch, every "differ" would fail.
    verdicts, _ = pair_checks(case, {"torch/detach": t, "burn/detach": t})
    assert [v["check"] for v in verdicts if not v["passed"]] == [
        "pair differ: tracked", "pair differ: grows", "pair differ: rss_grows"]
    assert all(v["reason"] == "r" and v["pair"] == "torch/detach ~ burn/detach" for v in verdicts)


def test_dense_rss_samples_are_preferred_to_checkpoints(case):
    r = record(flat(), False, rss_per_step=0.0)
    r["rss_samples"] = [[s, 0.002 * s] for s in range(25, 1001, 25)]
    assert compute(r, case)["rss_growth_mib_per_1000"] == pytest.approx(2.0, rel=1e-6)


def test_burn_versions_limit_expectations_and_pairs(tmp_path):
    text = CASE_TEXT.replace(
        'expect = { outcome = "panic", panic_step = 3,',
        'expect = { burn_versions = ">=0.22.0", outcome = "panic", panic_step = 3,',
    ).replace('same = ["outcome"]', 'same = ["outcome"]\nburn_versions = "<0.23.0"')
    path = tmp_path / "v.toml"
    path.write_text(text)
    case = cases.load_case(path)
    old = record(flat(), True)
    old.update(framework="burn", versions={"burn": "0.21.0"})
    old["metrics"] = compute(old, case)
    verdicts, skipped = run_checks(case, case.run("burn/target"), old)
    assert verdicts == [] and skipped[0]["burn_versions"] == ">=0.22.0" and skipped[0]["burn"] == "0.21.0"

    new = record(growing(), True)
    new.update(framework="burn", versions={"burn": "0.23.1"})
    new["metrics"] = compute(new, case)
    t = record(flat(), False)
    t["metrics"] = compute(t, case)
    verdicts, skipped = pair_checks(case, {"torch/detach": t, "burn/detach": new})
    assert verdicts == [] and skipped[0]["subject"] == "torch/detach ~ burn/detach"
    new["versions"]["burn"] = "0.22.1"
    verdicts, skipped = pair_checks(case, {"torch/detach": t, "burn/detach": new})
    assert len(verdicts) == 4 and skipped == []


def test_burn_versions_are_validated(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(CASE_TEXT.replace('reason = "r"', 'reason = "r"\nburn_versions = "newer than 0.22"'))
    with pytest.raises(cases.BadInput, match="pairs\\[0\\].burn_versions: not a version requirement"):
        cases.load_case(path)
