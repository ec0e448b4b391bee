"""`burn-torch-diff fuzz [--budget SECONDS] [--seed N] [--max-ops K] [--out DIR] [--found DIR]`.

Generates programs for `--budget` seconds, runs each under torch and burn 0.22.1
(and torch in float64), and writes every new divergence, shrunk, as a case file
with reproducers into `--found` (default `cases/found/`). The summary (programs
run, programs per second, divergences new and known by class, filters, operation
and operation-pair coverage) goes to `OUT/fuzz.json` (default `reports/fuzz/`).

Exit codes: 0 no new divergence; 1 new divergences written; 2 bad input;
3 infrastructure (a framework missing).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from .. import burn_sources, probe_build, workers
from ..argtypes import budget_seconds, nonempty, path, positive_int, seed, timeout_seconds
from ..engine import available
from ..errors import ExitCode, Infrastructure, Interrupted, signal_name
from ..escape import terminal
from ..frameworks import adapter_for
from ..model.fuzz import Divergences, FoundEntry, FuzzDocument, KnownDifference
from ..model.results import RawRun
from ..outputs import check_folder, write_or_keep
from ..paths import CASES_DIR
from ..results import now, provenance
from ..signals import say, show, stop_on_signals
from .campaign import Campaign, Found, Stats, program_ir
from .judge import record_of
from .known import REGISTRY
from .pool import WorkerPool
from .record import RunSummary, write

DEFAULT_OUT = Path("reports") / "fuzz"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--budget",
        type=budget_seconds,
        default=60.0,
        metavar="SECONDS",
        help="how long to search (default 60 s; the nightly campaign uses more)",
    )
    parser.add_argument(
        "--seed", type=seed, default=0, metavar="N", help="the search's seed, 0 to 2**64 - 1 (deterministic)"
    )
    parser.add_argument(
        "--max-ops",
        type=positive_int,
        default=8,
        metavar="K",
        help="operations per generated program, at most (default 8)",
    )
    parser.add_argument(
        "--out", type=path, default=DEFAULT_OUT, metavar="DIR", help=f"where fuzz.json goes (default {DEFAULT_OUT})"
    )
    parser.add_argument(
        "--found",
        type=path,
        default=CASES_DIR / "found",
        metavar="DIR",
        help="where new divergences are written as case files (default cases/found/)",
    )
    parser.add_argument(
        "--timeout", type=timeout_seconds, default=30.0, metavar="S", help="per-program timeout (default 30 s)"
    )
    parser.add_argument(
        "--max-programs",
        type=positive_int,
        metavar="N",
        help="stop after N programs (with --seed: the same programs every time)",
    )
    parser.add_argument(
        "--burn",
        type=nonempty,
        metavar="VERSION|latest|PATH",
        help="fuzz another burn release (its probe is built as upgrade-check builds it); "
        "default: the installed probe (the pinned release)",
    )


def summary(
    stats: Stats, campaign: Campaign, written: list[FoundEntry], seed: int, budget: float, burn: str
) -> FuzzDocument:
    by_class: dict[str, dict[str, int]] = {"new": {}, "known": {}}
    for key, n in stats.divergences.items():
        kind, _, name = key.partition(":")
        by_class[kind][name] = n
    return FuzzDocument(
        fuzz_schema_version=1,
        seed=seed,
        budget_s=budget,
        seconds=round(stats.seconds, 1),
        programs=stats.programs,
        programs_per_second=round(stats.rate(), 1),
        shrink_evaluations=stats.shrink_evaluations,
        outcomes=dict(stats.outcomes),
        divergences=Divergences(new=by_class["new"], known=by_class["known"]),
        filtered=dict(stats.filtered),
        gradcheck=dict(stats.gradcheck),
        worker_crashes=stats.crashes,
        worker_timeouts=stats.timeouts,
        coverage=campaign.coverage(),
        known_differences=[KnownDifference(id=k.id, title=k.title, case=k.case) for k in REGISTRY],
        found=written,
        burn=burn,
    )


def run(args: argparse.Namespace) -> int:
    # Every place it writes is checked before the first program runs (exit 2 naming the option).
    check_folder(args.out, "--out", ("fuzz.json",))
    check_folder(args.found, "--found")
    env: dict[str, str] = {}
    burn_label = "installed probe"
    if args.burn:
        source = burn_sources.resolve(burn_sources.parse(args.burn, "--burn"))
        built = probe_build.build(source, say)
        if not built.ok or built.probe is None:
            raise Infrastructure(
                f"--burn {args.burn}: the probe does not build against burn {source.label}: "
                + "; ".join(built.errors[:3])
            )
        env[adapter_for("program", "burn").override_env or "RUNNER_PROBE_PATH"] = built.probe
        burn_label = f"burn {source.label} ({built.probe})"
    available({("program", "torch"), ("program", "burn")}, env)  # exit 3 before any program runs
    started = now()
    written: list[FoundEntry] = []
    with WorkerPool(timeout_s=args.timeout, env=env) as pool:

        def on_found(found: Found) -> None:
            runs = pool.run_pair(program_ir(found.program))
            observed = {fw: _run_summary(record_of(runs[fw], fw)) for fw in ("torch", "burn")}
            paths = write(found, args.found, args.seed, observed)
            written.append(
                FoundEntry(
                    signature=found.signature,
                    class_=found.divergence.cls,
                    label=found.divergence.label,
                    detail=_jsonable(found.divergence.detail),
                    shrink_evaluations=found.evaluations,
                    flaky=found.flaky,
                    case=paths.case,
                    torch=paths.torch,
                    rust=paths.rust,
                )
            )
            flaky = " (flaky: it did not fail again on replay)" if found.flaky else ""
            say(f"new divergence {found.signature}{flaky}: {paths.case}")

        def progress(stats: Stats) -> None:
            known = sum(n for k, n in stats.divergences.items() if k.startswith("known:"))
            new = sum(n for k, n in stats.divergences.items() if k.startswith("new:"))
            say(
                f"fuzz: {stats.programs} programs, {stats.rate():.0f}/s, divergences known {known}, "
                f"new {new} ({len(written)} written)"
            )

        campaign = Campaign(pool, seed=args.seed, max_ops=args.max_ops, on_found=on_found, progress=progress)
        say(
            f"fuzz: seed {args.seed}, budget {args.budget:g} s, at most {args.max_ops} operations per program, "
            f"burn: {burn_label}"
        )
        try:
            with stop_on_signals():
                stats = campaign.run(args.budget, args.max_programs)
        except Interrupted as stop:
            # The workers go first (nothing outlives the campaign), then what it found is kept.
            workers.kill_running()
            doc = summary(campaign.stats, campaign, written, args.seed, args.budget, burn_label)
            doc = doc.model_copy(
                update={
                    "provenance": provenance(started, now()),
                    "partial": True,
                    "partial_reason": f"stopped by {signal_name(stop.signum)}",
                }
            )
            _write_summary(args.out / "fuzz.json", doc)
            say(f"fuzz: stopped by {signal_name(stop.signum)}; what it found until then: {args.out / 'fuzz.json'}")
            raise
    doc = summary(stats, campaign, written, args.seed, args.budget, burn_label)
    doc = doc.model_copy(update={"provenance": provenance(started, now())})
    _write_summary(args.out / "fuzz.json", doc)
    show(render(doc))
    show(f"written: {terminal(args.out / 'fuzz.json')}")
    return ExitCode.FAILED if written else ExitCode.OK


def _write_summary(path: Path, doc: FuzzDocument) -> None:
    """`fuzz.json`, atomically; if it cannot be written, kept elsewhere (exit 3 naming the file)."""
    write_or_keep([(path, doc.dump_json())], "fuzz.json", [("fuzz", doc.dump_json())])


def _run_summary(run: RawRun) -> RunSummary:
    """What one side of a found divergence did, for its case file's [about]."""
    failure = run.failure
    return RunSummary(
        outcome=run.outcome,
        failure=None if failure is None else f"{failure.op} (op {failure.op_index}): {failure.message[:300]}",
    )


def _jsonable(value: Any) -> dict[str, JsonValue]:
    """A divergence's detail as plain JSON (a value JSON has no word for becomes its text)."""
    data = json.loads(json.dumps(value, default=str))
    return data if isinstance(data, dict) else {"value": data}


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "none"


def render(doc: FuzzDocument) -> str:
    cov = doc.coverage
    lines = [
        f"fuzz: {doc.programs} programs in {doc.seconds} s ({doc.programs_per_second}/s), "
        f"{doc.shrink_evaluations} more while shrinking",
        f"outcomes (torch/burn): {_counts(doc.outcomes)}",
        f"divergences, known: {_counts(doc.divergences.known)}",
        f"divergences, new: {_counts(doc.divergences.new)}",
        f"filtered: {_counts(doc.filtered)}; gradient check: {_counts(doc.gradcheck)}",
        f"coverage: {len(cov.ops)} operations, each at least {min(cov.ops.values()) if cov.ops else 0} times"
        + (f" (below {cov.at_least}: {', '.join(cov.below)})" if cov.below else "")
        + f"; operation pairs seen {cov.pairs_seen} of {cov.pairs_possible}",
    ]
    for f in doc.found:
        lines.append(f"  new: {f.signature} -> {f.case}")
    return "\n".join(lines)
