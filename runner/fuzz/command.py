"""`burn-torch-diff fuzz [--budget SECONDS] [--seed N] [--jobs N | --cluster ADDRESS] ...`.

Generates programs for `--budget` seconds in `--jobs` shards on this machine (default one
per core) or in one shard per worker thread of a Dask cluster (`--cluster`), runs each
under torch and burn 0.22.1 (and torch in float64), localizes every divergence to the
statement where it starts, and writes one case file per new root cause, with
reproducers, into `--found` (default `cases/found/`). The summary (programs run and fully
judged, programs per second, divergences new and known, filters, coverage, the root causes)
goes to `OUT/fuzz.json` (default `reports/fuzz/`).

Exit codes: 0 no new root cause; 1 new root causes written; 2 bad input;
3 infrastructure (a framework missing, a cluster that cannot be reached).
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
from ..model.fuzz import Coverage, Divergences, FoundEntry, FuzzDocument, KnownDifference
from ..outputs import check_folder, write_or_keep
from ..paths import CASES_DIR
from ..program import data as program_data
from ..program.ir import ParsedProgram, walk
from ..results import now, provenance
from ..signals import say, show, stop_on_signals
from .campaign import ShardSpec, Stats, coverage_ops
from .jobs import Coordinator, default_jobs, run_local
from .known import REGISTRY
from .localize import Cause
from .pool import WorkerPool
from .record import minimal_program, write

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
        help="fuzz another burn release (its probe is built as upgrade-check builds it, or is the installed "
        "probe when that is the same build); "
        "default: the installed probe (the pinned release)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--jobs",
        type=positive_int,
        metavar="N",
        help=f"shards on this machine, each a process with its own workers (default one per core: {default_jobs()})",
    )
    where.add_argument(
        "--cluster",
        type=nonempty,
        metavar="ADDRESS",
        help="shard the campaign over a Dask cluster (tcp://HOST:8786): one shard per worker thread, "
        "merged here (needs the `cluster` extra: dask[distributed])",
    )
    parser.add_argument(
        "--no-shrink",
        dest="shrink",
        action="store_false",
        help="write each root cause with the program that showed it, not shrunk (faster; the replayed "
        "operation alone is still the case's program where a replay shows the cause)",
    )


def summary(
    stats: Stats,
    written: list[FoundEntry],
    seed: int,
    budget: float,
    burn: str,
    *,
    jobs: int = 1,
    cluster: str | None = None,
    shrink: bool = True,
    failures: list[str] | None = None,
) -> FuzzDocument:
    by_class: dict[str, dict[str, int]] = {"new": {}, "known": {}}
    for key, n in stats.divergences.items():
        kind, _, name = key.partition(":")
        by_class.setdefault(kind, {})[name] = n
    ops = coverage_ops(stats)
    return FuzzDocument(
        fuzz_schema_version=1,
        seed=seed,
        budget_s=budget,
        seconds=round(stats.seconds, 1),
        programs=stats.programs,
        programs_per_second=round(stats.rate(), 1),
        fully_judged=stats.fully_judged,
        replays=stats.replays,
        jobs=jobs,
        cluster=cluster,
        shrink=shrink,
        shard_failures=[f[:300] for f in failures or []],
        shrink_evaluations=stats.shrink_evaluations,
        outcomes=dict(stats.outcomes),
        divergences=Divergences(new=by_class["new"], known=by_class["known"]),
        filtered=dict(stats.filtered),
        worker_crashes=stats.crashes,
        worker_timeouts=stats.timeouts,
        coverage=Coverage(
            ops=ops,
            below=sorted(op for op, n in ops.items() if n < 10),
            at_least=10,
            pairs_seen=len(stats.pairs),
            pairs_possible=len(ops) ** 2,
        ),
        known_differences=[KnownDifference(id=k.id, title=k.title, case=k.case) for k in REGISTRY],
        found=written,
        burn=burn,
    )


def _statements(program: ParsedProgram) -> int:
    return sum(1 for s in walk(program.body) if s.op != "observe")


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
        burn_label = f"burn {source.label} ({'the installed probe' if built.installed else built.probe})"
    if args.cluster:
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise Infrastructure(
                "--cluster needs dask's distributed scheduler: pip install 'burn-torch-diff[cluster]' "
                "(or pip install 'dask[distributed]')"
            ) from None
    available({("program", "torch"), ("program", "burn")}, env)  # exit 3 before any program runs
    started = now()
    jobs = args.jobs or default_jobs()
    spec = ShardSpec(
        seed=args.seed,
        max_ops=args.max_ops,
        budget_s=args.budget,
        max_programs=args.max_programs,
        timeout_s=args.timeout,
        env=env,
        shrink=args.shrink,
    )
    written: dict[str, FoundEntry] = {}
    outcome_pool: list[WorkerPool] = []

    def on_cause(cause: Cause, first: bool) -> None:
        try:
            record(cause, first)
        except Exception as err:  # a case that cannot be written is said, and the search goes on
            coordinator.failures.append(f"{cause.signature}: its case was not written: {type(err).__name__}: {err}")
            say(f"fuzz: the case of {cause.signature} was not written: {err}")

    def record(cause: Cause, first: bool) -> None:
        if not outcome_pool:
            outcome_pool.append(WorkerPool(timeout_s=args.timeout, env=env))
        outcomes = _outcomes(outcome_pool[0], cause)
        paths = write(cause, args.found, args.seed, outcomes)
        written[cause.signature] = FoundEntry(
            signature=cause.signature,
            class_=cause.oracle,
            label=str(cause.detail.get("label")) if cause.detail.get("label") is not None else None,
            detail=_jsonable(cause.detail),
            shrink_evaluations=cause.evaluations,
            case=paths.case,
            torch=paths.torch,
            rust=paths.rust,
            op=cause.op,
            attributes=cause.attrs,
            region=cause.region,
            side=cause.side,
            statement=cause.statement,
            words=cause.words[:2000],
            statements=_statements(minimal_program(cause)),
            generated_statements=_statements(cause.original),
            first_program=cause.program_index,
        )
        if first:
            say(f"new root cause {cause.signature}: {paths.case}")

    def progress(stats: Stats) -> None:
        known = sum(n for k, n in stats.divergences.items() if k.startswith("known:"))
        say(
            f"fuzz: {stats.programs} programs ({stats.fully_judged} fully judged), {stats.rate():.0f}/s, "
            f"divergences known {known}, root causes {len(written)}"
        )

    coordinator = Coordinator(on_cause)
    where = f"cluster {args.cluster}" if args.cluster else f"{jobs} job{'s' if jobs != 1 else ''}"
    say(
        f"fuzz: seed {args.seed}, budget {args.budget:g} s, at most {args.max_ops} operations per program, "
        f"{where}, burn: {burn_label}"
    )

    def document(partial_reason: str | None = None) -> FuzzDocument:
        stats = coordinator.stats()
        entries = [
            entry.model_copy(
                update={
                    "programs": stats.causes.get(sig, 0),
                    "first_program": stats.first_seen.get(sig, entry.first_program),
                }
            )
            for sig, entry in written.items()
        ]
        doc = summary(
            stats,
            entries,
            args.seed,
            args.budget,
            burn_label,
            jobs=shards[0],
            cluster=args.cluster,
            shrink=args.shrink,
            failures=coordinator.failures,
        )
        update: dict[str, Any] = {"provenance": provenance(started, now())}
        if partial_reason is not None:
            update |= {"partial": True, "partial_reason": partial_reason}
        return doc.model_copy(update=update)

    shards = [jobs]
    try:
        with stop_on_signals():
            if args.cluster:
                from .cluster import run_cluster

                try:
                    shards[0] = run_cluster(args.cluster, spec, coordinator, progress)
                except (OSError, TimeoutError, RuntimeError) as err:
                    raise Infrastructure(f"--cluster {args.cluster}: {err}") from err
            else:
                run_local(spec, jobs, coordinator, progress)
    except Interrupted as stop:
        # The workers go first (nothing outlives the campaign), then what it found is kept.
        workers.kill_running()
        _write_summary(args.out / "fuzz.json", document(f"stopped by {signal_name(stop.signum)}"))
        say(f"fuzz: stopped by {signal_name(stop.signum)}; what it found until then: {args.out / 'fuzz.json'}")
        raise
    finally:
        for pool in outcome_pool:
            pool.close()
    doc = document()
    _write_summary(args.out / "fuzz.json", doc)
    show(render(doc))
    show(f"written: {terminal(args.out / 'fuzz.json')}")
    return ExitCode.FAILED if written else ExitCode.OK


def _outcomes(pool: WorkerPool, cause: Cause) -> dict[str, str]:
    """Each framework's outcome on the case's minimal program and on the generated one."""
    out: dict[str, str] = {}
    for prefix, program in (("", minimal_program(cause)), ("generated/", cause.original)):
        try:
            ir = program_data.materialize(program, seed=0).model_dump(mode="json")
        except Exception:
            continue
        runs = pool.run_pair(ir)
        for fw in ("torch", "burn"):
            out[f"{prefix}{fw}"] = str(runs[fw]["outcome"])
    return out


def _write_summary(path: Path, doc: FuzzDocument) -> None:
    """`fuzz.json`, atomically; if it cannot be written, kept elsewhere (exit 3 naming the file)."""
    write_or_keep([(path, doc.dump_json())], "fuzz.json", [("fuzz", doc.dump_json())])


def _jsonable(value: Any) -> dict[str, JsonValue]:
    """A divergence's detail as plain JSON (a value JSON has no word for becomes its text)."""
    data = json.loads(json.dumps(value, default=str))
    return data if isinstance(data, dict) else {"value": data}


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "none"


def render(doc: FuzzDocument) -> str:
    cov = doc.coverage
    share = f"{100 * doc.fully_judged / doc.programs:.0f} %" if doc.programs else "-"
    lines = [
        f"fuzz: {doc.programs} programs in {doc.seconds} s ({doc.programs_per_second}/s, {doc.jobs} shard"
        f"{'s' if doc.jobs != 1 else ''}{', cluster ' + doc.cluster if doc.cluster else ''}), "
        f"{doc.replays} statements replayed, {doc.shrink_evaluations} more programs while shrinking",
        f"fully judged: {doc.fully_judged} of {doc.programs} programs ({share})",
        f"outcomes (torch/burn): {_counts(doc.outcomes)}",
        f"divergences, known: {_counts(doc.divergences.known)}",
        f"divergences, new: {_counts(doc.divergences.new)}",
        f"filtered: {_counts(doc.filtered)}",
        f"coverage: {len(cov.ops)} operations, each at least {min(cov.ops.values()) if cov.ops else 0} times"
        + (f" (below {cov.at_least}: {', '.join(cov.below)})" if cov.below else "")
        + f"; operation pairs seen {cov.pairs_seen} of {cov.pairs_possible}",
    ]
    for f in doc.found:
        lines.append(f"  root cause {f.signature} ({f.programs} programs; case: {f.statements} statements): {f.case}")
    for failure in doc.shard_failures:
        lines.append(f"  shard failure: {failure}")
    return "\n".join(lines)
