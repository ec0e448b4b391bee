"""`burn-torch-diff upgrade-check [--from VERSION] [--to VERSION|latest|PATH]`.

Builds the probe against both burn sources (own folders, cached; a side that
is what the installed probe already is uses that probe, nothing built), runs the
torch side of every case once (torch does not depend on burn) and the burn
side once per source, judges each side like `check` does, and classifies
every burn run (see `classify`). Exit: 0 no change, 1 behaviour change,
2 bad input (including an `--out` that cannot be written, found before the
builds), 3 build-break or infrastructure, 128 + N after signal N (the runs
completed on each side are kept, marked partial, in kept files named on stderr).
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from .. import burn_sources as sources
from .. import cases as case_files
from .. import outputs, probe_build
from ..argtypes import add_measurement_options, nonempty, path, positive_int, timeout_seconds
from ..compare import RULE
from ..engine import Counts, FlopCounter, SpecKey, count_flop, judged_document, run_all
from ..errors import ExitCode, Interrupted
from ..escape import markdown, terminal
from ..frameworks import adapter_for
from ..model.case import Case
from ..model.results import ResultsDocument, RunRecord
from ..model.upgrade import Build, Classified, UpgradeClass, UpgradeReport
from ..noise import Controls
from ..progress import ConsoleReporter
from ..results import Measurement, dump, keep_partial, machine_state, now
from ..signals import say, show
from .classify import classify


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cases", nargs="*", metavar="CASE", help="case name or file; default: every case")
    parser.add_argument(
        "--from",
        dest="from_source",
        metavar="VERSION",
        type=nonempty,
        help="burn version before the upgrade (default: the pinned one, from rust_probe/Cargo.toml)",
    )
    parser.add_argument(
        "--to",
        dest="to_source",
        default="latest",
        metavar="VERSION|latest|PATH",
        type=nonempty,
        help="burn version after the upgrade: a version, 'latest' (the newest the registry has, "
        "pre-releases included, as `cargo info burn` reports it) or a local burn checkout",
    )
    parser.add_argument("--steps", type=positive_int, metavar="N", help="override the cases' step count")
    parser.add_argument("--timeout", type=timeout_seconds, metavar="S", help="per-run timeout in seconds")
    parser.add_argument(
        "--out",
        type=path,
        metavar="DIR",
        help="where upgrade.json, upgrade.md and both sides' results go (default: results/upgrade-FROM-to-TO)",
    )
    add_measurement_options(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-checkpoint progress lines")


OUT_FILES = ("results-from.json", "results-to.json", "upgrade.json", "upgrade.md")


def _only(cases: list[Case], framework: str) -> list[Case]:
    selected = [case_files.select(c, [framework], None) for c in cases]
    return [c for c in selected if c.runs]


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in ".-" else "_" for ch in text)[-60:]


def run(args: argparse.Namespace) -> int:
    before_src = sources.parse(args.from_source or sources.pinned_version(), "--from")
    after_src = sources.parse(args.to_source, "--to")
    cases = case_files.load_selected(args.cases, steps=args.steps, timeout=args.timeout)
    if args.out:
        outputs.check_folder(args.out, "--out", OUT_FILES)
    before, after = sources.resolve(before_src), sources.resolve(after_src)
    out = args.out or Path("results") / f"upgrade-{_slug(before.label)}-to-{_slug(after.label)}"
    outputs.check_folder(out, "--out", OUT_FILES)
    say(f"upgrade check: burn {before.label} -> {after.label}")

    builds: dict[str, Build] = {}
    for side, source in (("from", before), ("to", after)):
        result = probe_build.build(source, say)
        if result.installed:
            say(f"  probe against burn {source.label}: the installed probe ({result.probe})")
        else:
            say(f"  probe against burn {source.label}: {'built' if result.ok else 'BUILD FAILED'} ({_how(result)})")
        for error in result.errors:
            say(f"    {error}")
        builds[side] = result

    reporter = ConsoleReporter(verbose=not args.quiet)
    started = now()
    measurement = Measurement(start=machine_state(), controls=str(args.noise_controls), repeat=args.repeat)
    burn_cases, torch_cases = _only(cases, "burn"), _only(cases, "torch")
    broken = any(not b.ok for b in builds.values())
    if broken:
        say("a side did not build: every burn run is a build-break; nothing is run")
    # The program variants' FLOPs, counted once for both sides (run_all would count per call).
    counts: Counts = {}
    counted: FlopCounter = lambda _cases, _env, _controls: counts  # noqa: E731
    measure = {"repeat": args.repeat, "jobs": args.jobs, "controls": args.noise_controls, "count": counted}
    torch_records: dict[SpecKey, RunRecord] = {}
    side_records: dict[str, dict[SpecKey, RunRecord] | None] = {side: None if broken else {} for side in builds}
    try:
        if not broken:
            counts.update(count_flop(cases, {}, Controls(malloc=args.noise_controls.malloc, pin=False)))
        if torch_cases and not broken:
            run_all(torch_cases, reporter, into=torch_records, **measure)
        if not broken:
            # Interleaved, run by run (from, to, from, to, ...), so that the host's
            # drift over minutes falls on both sides alike instead of on one.
            for case in burn_cases:
                for spec in case.runs:
                    one = case_files.select(case, ["burn"], [spec.mode])
                    for side, result in builds.items():
                        say(f"burn {result.source}:")
                        override = adapter_for(case.kind, "burn").override_env
                        env = {override: result.probe} if override and result.probe else {}
                        records = side_records[side]
                        assert records is not None
                        run_all([one], reporter, env=env, into=records, **measure)
    except KeyboardInterrupt as err:
        stop = Interrupted.of(err)
        total = sum(len(c.runs) for c in torch_cases) + sum(len(c.runs) for c in burn_cases) * len(builds)
        done = len(torch_records) + sum(len(r or {}) for r in side_records.values())
        reason = f"interrupted by {stop.name} after {done} of {total} runs of the upgrade check"
        for side, side_record in side_records.items():
            ran = {**torch_records, **(side_record or {})}
            stop.partial.append(judged_document(cases, ran, started, measurement, f"{reason} ({side})"))
        keep_partial(stop, "upgrade-check")
        if stop is err:
            raise
        raise stop from None
    side_docs: dict[str, ResultsDocument | None] = {}
    for side, side_record in side_records.items():
        if side_record is None:
            side_docs[side] = None
            continue
        side_docs[side] = judged_document(cases, {**torch_records, **side_record}, started, measurement)

    errors = {b.source: b.errors for b in builds.values() if not b.ok}
    classes = classify(cases, side_records["from"], side_records["to"], torch_records, errors)
    report = UpgradeReport(
        from_=builds["from"],
        to=builds["to"],
        rule=RULE,
        torch_runs="run once and shared by both sides: torch does not depend on burn",
        counts=dict(Counter(c.klass.value for c in classes)),
        runs=classes,
    )
    results = {side: dump(doc) for side, doc in side_docs.items() if doc is not None}
    upgrade_json = report.dump_json()
    files = [(out / f"results-{side}.json", text) for side, text in results.items()]
    files += [(out / "upgrade.json", upgrade_json), (out / "upgrade.md", render_markdown(report))]
    outputs.write_or_keep(
        files,
        "--out",
        keep_as=[("upgrade-check", upgrade_json)]
        + [(f"upgrade-check-results-{side}", text) for side, text in results.items()],
    )
    show(render_table(report))
    show(f"written: {terminal(out / 'upgrade.json')}, {terminal(out / 'upgrade.md')}")

    if errors:
        return ExitCode.INFRASTRUCTURE
    return ExitCode.OK if all(c.klass == UpgradeClass.SAME for c in classes) else ExitCode.FAILED


def _how(build: Build) -> str:
    """Where a side's probe came from: the installed probe, the cache, or a build of N s."""
    if build.installed:
        return "the installed probe"
    return "cached" if build.cached else f"{build.seconds:.0f} s"


def _grouped(report: UpgradeReport) -> Iterator[tuple[UpgradeClass, list[Classified]]]:
    for klass in UpgradeClass:
        rows = [r for r in report.runs if r.klass == klass]
        if rows:
            yield klass, rows


def render_table(report: UpgradeReport) -> str:
    src, dst = report.from_, report.to
    t = terminal  # each name, label and message on its own line
    lines = [f"burn {t(src.source)} -> {t(dst.source)}"]
    for side in (src, dst):
        state = "ok" if side.ok else "BUILD FAILED"
        lines.append(f"  probe vs burn {t(side.source)} (lock: {t(side.burn or 'not locked')}): {state}, {_how(side)}")
        lines += [f"    {t(error)}" for error in side.errors]
    for klass, rows in _grouped(report):
        lines.append(f"\n{klass} ({len(rows)})")
        for row in rows:
            lines.append(f"  {t(row.case)} {t(row.run)}")
            lines += [f"    - {t(f)}" for f in row.findings]
    lines.append(f"\nperformance rule: {report.rule}")
    return "\n".join(lines)


def render_markdown(report: UpgradeReport) -> str:
    src, dst = report.from_, report.to
    lines = [
        f"## Upgrade check: burn {markdown(src.source)} → {markdown(dst.source)}",
        "",
        "| side | burn (lock) | probe build |",
        "|---|---|---|",
    ]
    for side in (src, dst):
        state = "ok" if side.ok else "**build-break**"
        lines.append(f"| {markdown(side.source)} | {markdown(side.burn or 'not locked')} | {state} ({_how(side)}) |")
    for side in (src, dst):
        if side.errors:
            lines += ["", f"First compiler errors against burn {markdown(side.source)}:", "", "```"]
            lines += [terminal(error).replace("`", "'") for error in side.errors] + ["```"]
    lines += ["", "| class | case | run | findings |", "|---|---|---|---|"]
    for klass, rows in _grouped(report):
        for row in rows:
            findings = "<br>".join(markdown(f) for f in row.findings) or "—"
            lines.append(f"| {klass} | {markdown(row.case)} | {markdown(row.run)} | {findings} |")
    lines += ["", f"Performance rule: {report.rule}.", f"torch: {report.torch_runs}.", ""]
    return "\n".join(lines)
