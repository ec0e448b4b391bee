"""The shared 'moved beyond noise' rule."""

import random

from runner.compare import MIN_FACTOR, performance_change, samples_changed
from runner.model.results import RunRecord, from_data


def noisy(median: float, n: int = 200, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [median * rng.uniform(0.8, 1.2) for _ in range(n)]


def test_same_distribution_is_not_a_change():
    assert samples_changed(noisy(1.0, seed=1), noisy(1.0, seed=2)).changed is False


def test_a_small_but_significant_shift_stays_below_the_factor_floor():
    result = samples_changed(noisy(1.0), noisy(1.2, seed=3))
    assert result.p_value < 1e-6 and result.changed is False


def test_a_large_shift_is_a_change_either_way():
    assert samples_changed(noisy(1.0), noisy(MIN_FACTOR * 1.4, seed=4)).changed is True
    assert samples_changed(noisy(3.0), noisy(1.0, seed=5)).changed is True


def test_a_few_wild_samples_are_not_a_change():
    before = noisy(1.0, n=5)
    after = noisy(1.0, n=5, seed=6)
    after[0] = 50.0
    assert samples_changed(before, after).changed is False


def test_too_few_samples_cannot_be_judged():
    assert samples_changed([1.0], [2.0]).changed is None


def run(step_ms):
    metrics = {"steps_completed": len(step_ms), "reference_window": [1, 100], "last_window": [101, 200]}
    return from_data(
        RunRecord,
        {"case": "c", "framework": "burn", "mode": "m", "outcome": "ok", "step_ms": step_ms, "metrics": metrics},
    )


def test_performance_change_looks_at_both_windows():
    flat = run(noisy(1.0, 200))
    grown = run(noisy(1.0, 100) + noisy(10.0, 100, seed=9))
    assert performance_change(flat, run(noisy(1.0, 200, seed=8))).changed is False
    result = performance_change(flat, grown)
    assert result.changed is True
    assert result.windows["reference"].changed is False and result.windows["last"].changed is True
    panicked = run([1.0, 1.1])
    assert performance_change(flat, panicked).changed is None
