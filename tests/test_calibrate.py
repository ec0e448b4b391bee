"""The calibration's analysis (`runner.calibrate`) on synthetic measurements:
what it counts as a false alarm and as a detection, and the floor it suggests."""

from __future__ import annotations

import json
import random
from pathlib import Path

from runner import calibrate
from runner.calibrate import Sample


def sample(session: int, factor: float, repeat: int, ms: float, controls: str = "malloc", rng=None) -> Sample:
    rng = rng or random.Random(session * 100 + repeat)
    reference = [ms * rng.uniform(0.97, 1.03) for _ in range(150)]
    last = [ms * rng.uniform(0.97, 1.03) for _ in range(200)]
    return Sample(
        experiment="rule",
        session=session,
        run="burn/without",
        controls=controls,
        factor=factor,
        busy_wait_us=round((factor - 1) * 800),
        repeat=repeat,
        outcome="ok",
        reference_median_ms=sorted(reference)[75],
        last_median_ms=sorted(last)[100],
        reference=reference,
        last=last,
        load_before=1.0,
        load_after=2.0,
        wall_s=2.0,
    )


def synthetic(sessions: int = 4, repeats: int = 3) -> list[Sample]:
    """Every session drifts a little (±4 %); injected factors scale the step."""
    out = []
    for s in range(1, sessions + 1):
        drift = 1 + 0.04 * (-1) ** s
        for r in range(1, repeats + 1):
            for factor in (1.0, 1.25, 2.0):
                out.append(sample(s, factor, r, 0.8 * drift * factor * (1 + 0.01 * r)))
        for factor in (1.0, 1.25, 2.0):
            out.append(sample(s, factor, 1, 1.5 * drift * factor, controls="none"))
    return out


def row(rows: list[list[str]], rule: str, controls: str, k: int) -> dict[str, str]:
    header = rows[0]
    found = next(r for r in rows[1:] if r[:3] == [rule, controls, str(k)])
    return dict(zip(header, found))


def test_a_and_detection_counts():
    rows = calibrate.rule_rows(synthetic(), floors={3: 1.1})
    # the old rule: an 8 % drift passes Mann-Whitney but not the 2x floor; 1.25x is missed
    old = row(rows, "old", "none", 1)
    assert old["A/A alarms"] == "0/3" and old["x1.25 caught"] == "0/3" and old["floor"] == "2"
    # three repeats and a floor of 1.1: 1.25x (1.15x after the drift) is caught every time, the 8 % drift never
    new = row(rows, "new", "malloc", 3)
    assert new["floor"] == "1.1"
    assert new["A/A alarms"] == "0/3" and new["x1.25 caught"] == "3/3" and new["x2 caught"] == "3/3"
    assert new["load"] == "1.0-2.0"


def test_suggested_floor_sits_above_every_a_a_factor():
    floors = calibrate.suggested_floors(synthetic())
    assert set(floors) == {1, 2, 3}  # every k the synthetic sessions have repeats for
    for k, (worst, floor) in floors.items():
        assert 1.07 < worst < 1.1, (k, worst)  # the drift between sessions: 1.04 / 0.96
        assert floor >= worst * calibrate.MARGIN and round(floor * 20) == floor * 20


def test_judge_needs_both_sides():
    one = [sample(1, 1.0, 1, 0.8)]
    assert calibrate.judge([], one, "new") is None
    assert calibrate.judge(one, [sample(2, 1.0, 1, 0.8)], "old") is False
    assert calibrate.judge(one, [sample(2, 3.0, 1, 2.4)], "old") is True


def test_samples_read_back(tmp_path: Path):
    recorder = calibrate.Recorder(tmp_path / "deep" / "cal.jsonl")
    for s in synthetic(sessions=2, repeats=1):
        recorder.add(s)
    assert calibrate.load(tmp_path / "deep" / "cal.jsonl") == recorder.samples
    line = json.loads((tmp_path / "deep" / "cal.jsonl").read_text().splitlines()[0])
    assert line["load_before"] == 1.0 and line["experiment"] == "rule"
    text = calibrate.rule_report(recorder.samples)
    assert "A/A" in text and "Spread of one run's reference median" in text
