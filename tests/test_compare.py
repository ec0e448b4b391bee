"""The shared 'moved beyond noise' rule."""

import random

from runner.compare import FLOOR, OLD_FLOOR, floor_for, medians_changed, performance_change, samples_changed
from runner.model.results import RunRecord, from_data


def noisy(median: float, n: int = 200, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [median * rng.uniform(0.8, 1.2) for _ in range(n)]


def test_same_distribution_is_not_a_change():
    assert samples_changed(noisy(1.0, seed=1), noisy(1.0, seed=2)).changed is False


def test_a_small_but_significant_shift_stays_below_the_factor_floor():
    shift = 1 + (FLOOR[1] - 1) / 2
    result = samples_changed(noisy(1.0), noisy(shift, seed=3))
    assert result.p_value < 1e-6 and result.changed is False


def test_a_large_shift_is_a_change_either_way():
    assert samples_changed(noisy(1.0), noisy(FLOOR[1] * 1.4, seed=4)).changed is True
    assert samples_changed(noisy(3.0), noisy(1.0, seed=5)).changed is True


def test_a_few_wild_samples_are_not_a_change():
    before = noisy(1.0, n=5)
    after = noisy(1.0, n=5, seed=6)
    after[0] = 50.0
    assert samples_changed(before, after).changed is False


def test_too_few_samples_cannot_be_judged():
    assert samples_changed([1.0], [2.0]).changed is None


def run(step_ms, repeats=(), timed=None, controls="malloc"):
    metrics = {"steps_completed": len(step_ms), "reference_window": [1, 100], "last_window": [101, 200]}
    data = {"case": "c", "framework": "burn", "mode": "m", "outcome": "ok", "step_ms": step_ms, "metrics": metrics}
    data["repeats"] = [
        {"outcome": "ok", "steps_completed": 200, "reference_median_ms": ref, "last_median_ms": last}
        for ref, last in repeats
    ]
    data["conditions"] = {"timed": timed, "controls": controls}
    return from_data(RunRecord, data)


def test_the_floor_falls_with_the_repeats():
    assert floor_for(1) == FLOOR[1]
    floors = [floor_for(k) for k in range(1, 8)]
    assert floors == sorted(floors, reverse=True) and floors[-1] < FLOOR[1]
    assert floor_for(5) < 1.25, "1.25x is caught with 5 repeats"


def test_repeats_change_when_their_medians_are_apart_and_beyond_the_floor():
    before = [1.00, 1.02, 0.98, 1.01, 0.99]
    assert medians_changed(before, [1.25, 1.27, 1.24, 1.3, 1.26]).changed is True
    assert medians_changed(before, [0.75, 0.77, 0.74, 0.78, 0.76]).changed is True
    # apart, but within the floor: machine noise
    assert medians_changed(before, [1.04, 1.05, 1.06, 1.05, 1.07]).changed is False
    # beyond the floor in the median, but overlapping: one quiet repeat is enough to doubt it
    assert medians_changed(before, [1.3, 1.3, 1.3, 1.3, 1.0]).changed is False
    assert medians_changed([1.0], [2.0]).changed is None
    change = medians_changed(before, [1.25, 1.27, 1.24, 1.3, 1.26])
    assert change.repeats == (5, 5) and "5/5 repeats" in change.detail


def test_repeated_runs_compare_by_their_repeats():
    same_steps = noisy(1.0, 200, seed=10)
    before = run(same_steps, repeats=[(1.0, 1.0), (1.02, 1.01), (0.99, 0.98)])
    after = run(same_steps, repeats=[(1.3, 1.3), (1.32, 1.31), (1.29, 1.33)])
    result = performance_change(before, after)
    assert result.changed is True and result.windows["reference"].repeats == (3, 3)
    # one side measured once: the single-run rule on the per-step samples
    assert performance_change(before, run(same_steps)).windows["reference"].repeats == (1, 1)


def test_runs_not_timed_alone_are_not_compared():
    flat = run(noisy(1.0, 200))
    slow = run(noisy(5.0, 200, seed=11), timed=False)
    assert performance_change(flat, slow).changed is None
    assert performance_change(flat, run(noisy(5.0, 200, seed=11), timed=True)).changed is True


def test_performance_change_looks_at_both_windows():
    flat = run(noisy(1.0, 200))
    grown = run(noisy(1.0, 100) + noisy(10.0, 100, seed=9))
    assert performance_change(flat, run(noisy(1.0, 200, seed=8))).changed is False
    result = performance_change(flat, grown)
    assert result.changed is True
    assert result.windows["reference"].changed is False and result.windows["last"].changed is True
    panicked = run([1.0, 1.1])
    assert performance_change(flat, panicked).changed is None


def test_runs_measured_without_the_malloc_settings_keep_the_old_floor():
    before = run(noisy(1.0, 200))
    after = run(noisy(1.7, 200, seed=12))
    assert performance_change(before, after).changed is True
    for uncontrolled in (run(noisy(1.7, 200, seed=12), controls="none"), run(noisy(1.7, 200, seed=12), controls=None)):
        change = performance_change(before, uncontrolled)
        assert change.changed is False and change.windows["reference"].floor == OLD_FLOOR
    assert performance_change(before, run(noisy(2.5, 200, seed=13), controls="pin")).changed is True


def test_the_detail_says_how_loaded_each_side_was():
    def loaded(step_ms, load):
        record = run(step_ms)
        conditions = record.conditions.model_copy(update={"load_before": load})
        return record.model_copy(update={"conditions": conditions})

    change = performance_change(loaded(noisy(1.0, 200), 1.0), loaded(noisy(5.0, 200, seed=14), 4.25))
    assert change.changed is True
    assert change.windows["reference"].detail.endswith("load 1.0 -> 4.2")
    assert "load" not in performance_change(run(noisy(1.0, 200)), run(noisy(5.0, 200))).windows["last"].detail
