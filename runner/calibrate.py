"""Calibrate the measurement from data: `python3 -m runner.calibrate noise|rule`.

`noise`: what each noise control does. Runs one p10 mode (default
burn/without) N times with each set of controls (all, none, malloc only, pin
only), interleaved, and reports each set's median of the reference-window
medians and their spread (max - min) / median over the N runs.

`rule`: the false alarm and detection rates of the change rule
(`runner.compare`). In each of N sessions, every selected p10_ema run is
measured K times (fresh processes, interleaved) as it is (factor 1) and with a
busy wait added to every step of (factor - 1) x its step time (the probe's and
the torch adapter's `busy_wait_us`, calibration only), for each factor; and
once per configuration without the noise controls, for the rule as it was.
Then:

- A/A: session i against session i + 1, the same build: every change the rule
  sees is a false alarm;
- detection: session i (factor 1) against session i + 1 (factor f): the rule
  should see the change.

for the old rule (one run per side, Mann-Whitney U on the per-step times, a
2x floor) on runs without the noise controls, and the current rule at each K
from 1 to the K measured (the first k repeats of each session). It also
suggests, per k, the smallest floor that kept every A/A comparison quiet.

Every measurement is appended as one JSON line to `--out` as it is made (an
interrupted calibration keeps what it measured); `--from FILE ...` analyses
files again without running anything (with several, e.g. a calibration and a
later validation, the A/A over every pair of sessions at the rule's floors is
the out-of-sample check). Each line records the machine's load
average before and after the run.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import itertools
import json
import math
import statistics
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import cases as case_files
from . import compare, metrics, noise
from .argtypes import noise_controls, path, positive_int
from .engine import request_for
from .errors import ExitCode
from .execute import execute
from .model.case import Case, RunRef
from .terminal import table
from .wording import value_text

FACTORS = (1.1, 1.25, 1.5, 2.0)
RULE_RUNS = ("burn/without", "torch/detach", "torch/ema-only")
NOISE_SETS = ("all", "none", "malloc", "pin")
# The rule is calibrated with the default controls; "before" is without any.
DEFAULT, NONE = noise.Controls(), noise.Controls(malloc=False, pin=False)


@dataclass(frozen=True)
class Sample:
    """One measured run, as one JSON line."""

    experiment: str
    session: int
    run: str
    controls: str
    factor: float
    busy_wait_us: int
    repeat: int
    outcome: str
    reference_median_ms: float | None
    last_median_ms: float | None
    reference: list[float]
    last: list[float]
    load_before: float | None
    load_after: float | None
    wall_s: float

    @classmethod
    def of(cls, data: dict[str, Any]) -> Sample:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def measure(
    case: Case,
    run: str,
    controls: noise.Controls,
    busy_wait_us: int,
    experiment: str,
    session: int,
    factor: float,
    repeat: int,
) -> Sample:
    """One run of `case`'s `run` in a fresh worker, as check runs it."""
    ref = RunRef.parse(run)
    request = request_for(case, ref.framework, ref.mode, {}, controls, {"busy_wait_us": busy_wait_us})
    load_before = noise.load_average()
    record = execute(request)
    # both windows, or neither (a run that failed or did not reach the last window)
    last_window = metrics.window(record.step_ms, *case.windows.last_range(case.steps))
    reference = metrics.window(record.step_ms, *case.windows.reference_range())
    if record.outcome != "ok" or last_window is None or reference is None:
        reference, last_window = [], []
    return Sample(
        experiment=experiment,
        session=session,
        run=run,
        controls=str(controls),
        factor=factor,
        busy_wait_us=busy_wait_us,
        repeat=repeat,
        outcome=record.outcome,
        reference_median_ms=_median(reference),
        last_median_ms=_median(last_window),
        reference=[round(v, 5) for v in reference],
        last=[round(v, 5) for v in last_window],
        load_before=load_before,
        load_after=noise.load_average(),
        wall_s=round(record.wall_s, 3),
    )


class Recorder:
    def __init__(self, out: Path):
        self.out = out
        out.parent.mkdir(parents=True, exist_ok=True)
        self.samples: list[Sample] = []

    def add(self, sample: Sample) -> None:
        self.samples.append(sample)
        with self.out.open("a", encoding="utf-8") as stream:
            stream.write(json.dumps(sample.__dict__) + "\n")
        load = "-" if sample.load_before is None else f"{sample.load_before:.1f}"
        print(
            f"  [{sample.experiment} s{sample.session} r{sample.repeat}] {sample.run} x{sample.factor:g} "
            f"({sample.controls}): ref {value_text(sample.reference_median_ms, '.3f')} ms, last "
            f"{value_text(sample.last_median_ms, '.3f')} ms, load {load}",
            file=sys.stderr,
            flush=True,
        )


def load(path_: Path, offset: int = 0) -> list[Sample]:
    """The samples of one file; `offset` added to their session numbers (several files)."""
    samples = [Sample.of(json.loads(line)) for line in path_.read_text().splitlines() if line.strip()]
    return [dataclasses.replace(s, session=s.session + offset) if offset else s for s in samples]


# ---- noise: each control on and off ----------------------------------------------


def collect_noise(case: Case, run: str, sets: list[str], rounds: int, recorder: Recorder) -> None:
    for session in range(1, rounds + 1):
        order = sets[session % len(sets) :] + sets[: session % len(sets)]  # rotate: no set always first
        for name in order:
            recorder.add(measure(case, run, noise.Controls.parse(name), 0, "noise", session, 1.0, 1))


def _summary_cells(values: list[float]) -> list[str]:
    """n, median, min, max (ms) and spread of a run's medians, as table cells."""
    return [
        str(len(values)),
        f"{statistics.median(values):.3f}",
        f"{min(values):.3f}",
        f"{max(values):.3f}",
        f"{metrics.relative_spread(values):.1%}",
    ]


def noisetable(samples: list[Sample]) -> str:
    rows = [["run", "controls", "runs", "median ms", "min ms", "max ms", "spread", "load (min-max)"]]
    keys = sorted({(s.run, s.controls) for s in samples if s.experiment == "noise"})
    for run, controls in keys:
        chosen = [s for s in samples if s.experiment == "noise" and (s.run, s.controls) == (run, controls)]
        values = [s.reference_median_ms for s in chosen if s.reference_median_ms is not None]
        if not values:
            continue
        rows.append([run, controls, *_summary_cells(values), _load_range(chosen)])
    return table(rows)


def _load_range(samples: Iterable[Sample]) -> str:
    loads = [v for s in samples for v in (s.load_before, s.load_after) if v is not None]
    return f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"


# ---- rule: A/A and injected slowdowns ---------------------------------------------


def base_step_us(case: Case, runs: list[str], controls: list[noise.Controls], recorder: Recorder) -> dict[str, int]:
    """Each run's step time under each set of controls (median of 3 pilot runs), in µs."""
    out: dict[str, int] = {}
    for c in controls:
        for run in runs:
            values = []
            for i in range(3):
                sample = measure(case, run, c, 0, "pilot", 0, 1.0, i + 1)
                recorder.add(sample)
                if sample.reference_median_ms is not None:
                    values.append(sample.reference_median_ms)
            if not values:
                print(f"calibrate: {run} did not reach its windows; nothing to calibrate", file=sys.stderr)
                raise SystemExit(ExitCode.INFRASTRUCTURE)
            out[f"{run}|{c}"] = round(statistics.median(values) * 1000)
    return out


def collect_rule(
    case: Case,
    runs: list[str],
    factors: tuple[float, ...],
    sessions: int,
    repeat: int,
    before: bool,
    recorder: Recorder,
) -> None:
    configs = [1.0, *factors]
    controls = [DEFAULT, NONE] if before else [DEFAULT]
    base = base_step_us(case, runs, controls, recorder)
    print(f"step times (µs, pilot): {base}", file=sys.stderr, flush=True)

    def wait(run: str, c: noise.Controls, factor: float) -> int:
        return round((factor - 1) * base[f"{run}|{c}"])

    for session in range(1, sessions + 1):
        for r in range(1, repeat + 1):
            order = configs[r % len(configs) :] + configs[: r % len(configs)]
            for factor in order:
                for run in runs:
                    recorder.add(measure(case, run, DEFAULT, wait(run, DEFAULT, factor), "rule", session, factor, r))
        if before:
            for factor in configs:
                for run in runs:
                    recorder.add(measure(case, run, NONE, wait(run, NONE, factor), "rule", session, factor, 1))


def judge(before: list[Sample], after: list[Sample], rule: str, floor: float | None = None) -> bool | None:
    """Does `rule` see a change between two sets of samples of one run?
    `old`: one run per side, per-step Mann-Whitney U and a 2x floor; `new`: `runner.compare`."""
    if not before or not after or any(s.reference_median_ms is None for s in before + after):
        return None
    verdicts = []
    for name in ("reference", "last"):
        b, a = getattr(before[0], name), getattr(after[0], name)
        if rule == "old":
            verdicts.append(compare.samples_changed(b, a, min_factor=floor or compare.OLD_FLOOR).changed)
        else:
            mb, ma = _medians(before, name), _medians(after, name)
            verdicts.append(compare.rule_change(mb, ma, b, a, min_factor=floor).changed)
    return any(v is True for v in verdicts)


def _medians(samples: list[Sample], name: str) -> list[float]:
    values = [getattr(s, f"{name}_median_ms") for s in samples]
    return [v for v in values if v is not None]


def _aa_factor(before: list[Sample], after: list[Sample], rule_k: int) -> float:
    """The largest window factor (as >= 1) between two sets that passed the
    rule's test (non-overlap, or Mann-Whitney for k = 1): what a floor must stay above."""
    worst = 1.0
    for name in ("reference", "last"):
        # k = 1: the per-step test (no medians); k >= 2: the medians' (no samples)
        by_repeats = rule_k >= 2
        mb, ma = (_medians(before, name), _medians(after, name)) if by_repeats else ([], [])
        sb, sa = ([], []) if by_repeats else (getattr(before[0], name), getattr(after[0], name))
        w = compare.rule_change(mb, ma, sb, sa, min_factor=1.0)
        if w.changed and math.isfinite(w.factor) and w.factor > 0:
            worst = max(worst, w.factor, 1 / w.factor)
    return worst


@dataclass
class Tally:
    hits: int = 0
    total: int = 0

    def add(self, verdict: bool | None) -> None:
        if verdict is not None:
            self.total += 1
            self.hits += bool(verdict)

    def __str__(self) -> str:
        return f"{self.hits}/{self.total}" if self.total else "-"


def _sets(samples: list[Sample], controls: str, k: int) -> dict[tuple[int, str, float], list[Sample]]:
    out: dict[tuple[int, str, float], list[Sample]] = {}
    for s in samples:
        if s.experiment == "rule" and s.controls == controls and s.repeat <= k:
            out.setdefault((s.session, s.run, s.factor), []).append(s)
    return {key: sorted(v, key=lambda s: s.repeat) for key, v in out.items()}


def rule_rows(samples: list[Sample], floors: dict[int, float] | None = None) -> list[list[str]]:
    """Rows of the calibration table: rule, controls, k, A/A alarms, detections per factor, load."""
    factors = sorted({s.factor for s in samples if s.experiment == "rule" and s.factor != 1.0})
    sessions, runs, k_max = _axes(samples)
    header = ["rule", "controls", "K", "floor", "A/A alarms"] + [f"x{f:g} caught" for f in factors] + ["load"]
    rows = [header]
    plans: list[tuple[str, str, int, float | None]] = [("old", str(NONE), 1, None), ("old", str(DEFAULT), 1, None)]
    plans += [("new", str(DEFAULT), k, (floors or {}).get(k)) for k in range(1, k_max + 1)]
    for rule, controls, k, floor in plans:
        sets = _sets(samples, controls, k)
        if not sets:
            continue
        aa, caught = Tally(), {f: Tally() for f in factors}
        for a, b in itertools.pairwise(sessions):
            for run in runs:
                base_a = sets.get((a, run, 1.0), [])
                aa.add(judge(base_a, sets.get((b, run, 1.0), []), rule, floor))
                for f in factors:
                    caught[f].add(judge(base_a, sets.get((b, run, f), []), rule, floor))
        used = [s for v in sets.values() for s in v]
        shown = compare.OLD_FLOOR if rule == "old" else (floor or compare.floor_for(k))
        rows.append(
            [rule, controls, str(k), f"{shown:g}", str(aa)] + [str(caught[f]) for f in factors] + [_load_range(used)]
        )
    return rows


MARGIN = 1.03


def _axes(samples: list[Sample]) -> tuple[list[int], list[str], int]:
    """The rule experiment's sessions, runs and largest number of repeats."""
    rule = [s for s in samples if s.experiment == "rule"]
    sessions = sorted({s.session for s in rule})
    runs = sorted({s.run for s in rule})
    k_max = max((s.repeat for s in rule if s.controls == str(DEFAULT)), default=0)
    return sessions, runs, k_max


def _aa_pairs(
    samples: list[Sample], sessions: list[int], runs: list[str], k: int
) -> Iterator[tuple[list[Sample], list[Sample]]]:
    """Every pair of sessions (not only neighbours), per run: the first k unslowed repeats of each."""
    sets = _sets(samples, str(DEFAULT), k)
    for i, a in enumerate(sessions):
        for b in sessions[i + 1 :]:
            for run in runs:
                yield sets.get((a, run, 1.0), []), sets.get((b, run, 1.0), [])


def suggested_floors(samples: list[Sample]) -> dict[int, tuple[float, float]]:
    """k -> (the largest A/A factor that passed the rule's test, the floor above it:
    that factor with a 3 % margin, rounded up to 0.05, and no lower than the
    floor of a larger k)."""
    sessions, runs, k_max = _axes(samples)
    out: dict[int, tuple[float, float]] = {}
    for k in range(1, k_max + 1):
        worst = 1.0
        # every pair of sessions, not only neighbours: more A/A comparisons for the floor
        for sa, sb in _aa_pairs(samples, sessions, runs, k):
            if sa and sb and all(s.reference_median_ms is not None for s in sa + sb):
                worst = max(worst, _aa_factor(sa, sb, k))
        out[k] = (worst, math.ceil(round(worst * MARGIN * 20, 6)) / 20)
    # more repeats never need a higher floor than fewer
    for k in sorted(out)[::-1][1:]:
        out[k] = (out[k][0], max(out[k][1], out[k + 1][1]))
    return out


def spread_rows(samples: list[Sample]) -> list[list[str]]:
    """The spread of each run's reference median over the sessions (first repeat, factor 1)."""
    rows = [["run", "controls", "runs", "median ms", "min ms", "max ms", "spread"]]
    for run in sorted({s.run for s in samples if s.experiment == "rule"}):
        for controls in (str(NONE), str(DEFAULT)):
            values = [
                s.reference_median_ms
                for s in samples
                if s.experiment == "rule"
                and (s.run, s.controls, s.factor, s.repeat) == (run, controls, 1.0, 1)
                and s.reference_median_ms is not None
            ]
            if values:
                rows.append([run, controls, *_summary_cells(values)])
    return rows


def ratio_rows(samples: list[Sample]) -> list[list[str]]:
    """The flat runs' own slowdown ratio (last / reference window) over every
    measurement, with and without the controls: what a case's `slowdown_ratio`
    bound on a flat run has to leave room for."""
    rows = [["run", "controls", "runs", "median", "min", "max", "above 1.5", "above 2"]]
    for run in sorted({s.run for s in samples if s.experiment == "rule"}):
        for controls in (str(NONE), str(DEFAULT)):
            ratios = [
                s.last_median_ms / s.reference_median_ms
                for s in samples
                if s.experiment == "rule"
                and (s.run, s.controls) == (run, controls)
                and s.reference_median_ms
                and s.last_median_ms is not None
            ]
            if ratios:
                rows.append(
                    [
                        run,
                        controls,
                        str(len(ratios)),
                        f"{statistics.median(ratios):.3f}",
                        f"{min(ratios):.3f}",
                        f"{max(ratios):.3f}",
                        str(sum(r > 1.5 for r in ratios)),
                        str(sum(r > 2 for r in ratios)),
                    ]
                )
    return rows


def all_pairs_rows(samples: list[Sample]) -> list[list[str]]:
    """A/A over every pair of sessions (not only neighbours) at the rule's own
    floors (`runner.compare.FLOOR`): with samples from several files, this is
    the out-of-sample check of floors calibrated on one of them."""
    sessions, runs, k_max = _axes(samples)
    rows = [["K", "floor", "A/A alarms (all pairs)", "largest A/A factor"]]
    for k in range(1, k_max + 1):
        tally, worst = Tally(), 1.0
        for sa, sb in _aa_pairs(samples, sessions, runs, k):
            if len(sa) == len(sb) == k:
                tally.add(judge(sa, sb, "new"))
                worst = max(worst, _aa_factor(sa, sb, k))
        rows.append([str(k), f"{compare.floor_for(k):g}", str(tally), f"{worst:.3f}"])
    return rows


def rule_report(samples: list[Sample]) -> str:
    out = ["A/A: session i vs i + 1 (same build); caught: session i vs session i + 1 with the slowdown;"]
    out.append("counts are run comparisons (each: both windows) that the rule called changed / compared.")
    out.append(table(rule_rows(samples)))
    floors = suggested_floors(samples)
    if floors:
        out += [
            "",
            f"Largest A/A factor that passed the rule's test (all pairs of sessions), and the floor above it "
            f"(x{MARGIN:g}, rounded up to 0.05):",
        ]
        out += [f"  K={k}: x{worst:.3f} -> floor {floor:g}" for k, (worst, floor) in floors.items()]
        out += ["", "With those floors:", table(rule_rows(samples, {k: f for k, (_w, f) in floors.items()}))]
    out += ["", "A/A over every pair of sessions at the rule's floors (runner.compare.FLOOR):"]
    out.append(table(all_pairs_rows(samples)))
    out += ["", "Spread of one run's reference median over the sessions (first repeat):", table(spread_rows(samples))]
    out += ["", "The flat runs' own slowdown ratio (last / reference window), every measurement:"]
    out.append(table(ratio_rows(samples)))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m runner.calibrate", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("experiment", choices=("noise", "rule"))
    parser.add_argument("--case", default="p10_ema", help="a p10 case (default p10_ema)")
    parser.add_argument("--run", action="append", metavar="FRAMEWORK/MODE", help="runs to measure (repeatable)")
    parser.add_argument("--sessions", type=positive_int, default=11, help="sessions (rule) or rounds (noise)")
    parser.add_argument("--repeat", type=positive_int, default=5, help="repeats per session and configuration (rule)")
    parser.add_argument("--factor", type=float, action="append", help="injected slowdowns (default 1.1 1.25 1.5 2)")
    parser.add_argument("--no-before", action="store_true", help="rule: skip the runs without noise controls")
    parser.add_argument(
        "--controls",
        type=noise_controls,
        action="append",
        help="noise: the sets of controls to compare (default all, none, malloc, pin)",
    )
    parser.add_argument("--steps", type=positive_int, help="override the case's step count")
    parser.add_argument("--out", type=path, help="JSON lines of every measurement (default results/calibration/...)")
    parser.add_argument(
        "--from",
        dest="from_files",
        type=path,
        nargs="+",
        metavar="FILE",
        help="analyse these files (sessions of each file kept apart); run nothing",
    )
    args = parser.parse_args(argv)

    if args.from_files:
        samples = [s for i, f in enumerate(args.from_files) for s in load(f, offset=1000 * i)]
    else:
        case = case_files.load_selected([args.case], steps=args.steps)[0]
        if case.kind != "p10":
            parser.error(f"--case {args.case}: the busy wait exists in p10 cases only")
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        out = args.out or Path("results/calibration") / f"{args.experiment}-{stamp}.jsonl"
        recorder = Recorder(out)
        print(f"measurements: {out}", file=sys.stderr)
        if args.experiment == "noise":
            sets = [str(c) for c in args.controls] if args.controls else list(NOISE_SETS)
            collect_noise(case, (args.run or ["burn/without"])[0], sets, args.sessions, recorder)
        else:
            factors = tuple(args.factor or FACTORS)
            runs = args.run or list(RULE_RUNS)
            collect_rule(case, runs, factors, args.sessions, args.repeat, not args.no_before, recorder)
        samples = recorder.samples
    print(noisetable(samples) if args.experiment == "noise" else rule_report(samples))
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
