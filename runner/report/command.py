"""`python3 -m runner report`: run every case (or read results files), compare
each machine with its previous run in the history folder, and write
`report.html`, `report.md` and `results.json` into the output folder.

Everything that can fail on bad input (reading and validating results files,
the output and history folders, the previous runs, rendering) happens before
the first run and the first write. Then the report files and the history
entries are written as one (`runner.atomic.write_together`, under the history
folder's lock): each to a temporary file, and only when all are complete are
they renamed, with signals held back. A failure or a signal before that
leaves the previous report and the history as they were; a report and its
history entry change together or not at all.

A signal while the cases run keeps the completed runs in a kept file (marked
partial) and leaves the report as it was. A write that fails after the runs
(a full disk) keeps the results in a kept file too, and says where (exit 3).
A partial results file (`--from-results`) is reported, but not added to the
history.

Exit codes: 0 nothing changed and every expectation holds; 1 otherwise;
2 bad input; 3 infrastructure (a framework or the probe missing, a write that
failed); 128 + N after signal N.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable
from pathlib import Path

from .. import cases as case_files
from .. import outputs
from ..argtypes import add_measurement_options, path
from ..engine import check
from ..errors import BadInput, Infrastructure, Interrupted, RunnerError
from ..model.case import Case, ProgramCase
from ..model.results import ResultsDocument
from ..progress import ConsoleReporter
from ..results import bundle, dump, keep_partial, load_results, now, provenance
from ..signals import say, show
from . import browser, fuzzing, html_page, markdown, trend, upgrades
from .changes import changes
from .curves import curves
from .differences import differences
from .history import History
from .machines import MachineResults, fingerprint, group
from .model import Comparison, Report

DEFAULT_OUT = Path("reports")
REPORT_FILES = ("results.json", "report.md", "report.html")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "cases",
        nargs="*",
        metavar="CASE",
        help="case name (file in cases/) or path to a case file; default: every case",
    )
    parser.add_argument(
        "--out",
        type=path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"write report.html, report.md and results.json here (default: {DEFAULT_OUT})",
    )
    parser.add_argument(
        "--history",
        type=path,
        metavar="DIR",
        help="history folder: each run is added, and compared with the previous run "
        "of the same machine (default: OUT/history)",
    )
    parser.add_argument(
        "--from-results",
        type=path,
        nargs="+",
        metavar="FILE",
        help="report on these results files (from `check --json` or `report`; several "
        "machines give one column set each) instead of running the cases",
    )
    add_measurement_options(parser)

    parser.add_argument(
        "--upgrades",
        type=path,
        nargs="*",
        metavar="DIR",
        help="upgrade-check output folders (or their upgrade.json): the burn versions each "
        f"difference was seen on, and the history view (default: {upgrades.DEFAULT_GLOB}; "
        "the option alone: none). Unreadable ones are listed on the page and left out",
    )
    parser.add_argument(
        "--fuzz",
        type=path,
        metavar="FILE",
        help=f"the fuzz summary to show (default: {fuzzing.DEFAULT} when it exists)",
    )
    parser.add_argument(
        "--screenshots",
        action="store_true",
        help=f"also photograph report.html with headless chromium into OUT/{browser.SHOTS}/ "
        f"({', '.join(f'{n} {w}x{h}' for n, (w, h) in browser.VIEWPORTS.items())})",
    )


def _fresh_results(
    args: argparse.Namespace, before_runs: Callable[[], None]
) -> tuple[list[tuple[ResultsDocument, str]], list[Case]]:
    cases = case_files.load_selected(args.cases)
    before_runs()
    try:
        doc = check(
            cases,
            ConsoleReporter(),
            repeat=args.repeat,
            jobs=args.jobs,
            controls=args.noise_controls,
        )
    except Interrupted as stop:
        keep_partial(stop, "report")
        raise
    return [(doc, "this run")], cases


def _from_files(paths: list[Path]) -> list[tuple[ResultsDocument, str]]:
    return [(doc, str(p)) for p in paths for doc in load_results(p)]


def _compare(history: History, machine: MachineResults) -> Comparison:
    previous = history.previous(machine)
    if previous is None:
        return Comparison(None, note=f"no earlier run of this machine in {history.folder}; nothing to compare with")
    before = previous.load()
    return Comparison(previous, changes(before, machine.doc), before.provenance)


def build(
    inputs: list[tuple[ResultsDocument, str]], history: History, upgrade_paths: list[Path] | None = None
) -> Report:
    machines = group(inputs)
    generated = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    report = Report(machines, [_compare(history, m) for m in machines], generated)
    report.upgrades, report.unreadable_upgrades = upgrades.read(upgrade_paths or [])
    report.history = trend.load(history, machines)
    cases = report.cases()
    pairs = {case: report.pairs(case) for case in cases}
    report.differences = differences(machines, cases, pairs, report.history.all(), report.upgrades)
    return report


def _check_outputs(out: Path, history: History) -> None:
    outputs.check_folder(out, "--out", REPORT_FILES)
    outputs.check_folder(history.folder, "--history")


def _check_previous_run(history: History) -> None:
    """Before running the cases: this machine's latest history entry must be
    readable, or the comparison would fail after every run was made."""
    here = provenance(now(), now())
    latest = history.latest(fingerprint(here))
    if latest is not None:
        latest.load()


# Where a pair's training curves start to part: (case, variant, the step where they part) -> the
# text, or None (`runner.fuzz.origins.localize`, handed in by the command line).
Localize = Callable[[list[tuple[ProgramCase, str, int]]], list[str | None]]


def _origins(report: Report, ran: list[Case], localize: Localize) -> dict[tuple[str, str, str], str | None]:
    """Asks `localize` about every pair of the same variant whose curves part (`curves`)."""
    programs = {c.name: c for c in ran if isinstance(c, ProgramCase)}
    infos = {info.name: info for m in report.machines for info in m.doc.cases}
    keys, requests = [], []
    for machine in report.machines:
        for name, case in programs.items():
            if name not in infos:
                continue
            for c in curves(machine, infos[name]):
                if c.first_apart is None or c.a.mode != c.b.mode or c.a.mode not in case.programs:
                    continue
                keys.append((c.case, str(c.a), str(c.b)))
                requests.append((case, c.a.mode, c.first_apart))
    return dict(zip(keys, localize(requests), strict=True))


def run(args: argparse.Namespace, localize: Localize | None = None) -> int:
    """`localize`: asked where the curves of the pairs that part start to part (None: not asked)."""
    out: Path = args.out
    if out.exists() and not out.is_dir():
        raise BadInput(f"--out {out}: is a file, expected a folder")
    if args.from_results and args.cases:
        raise BadInput("give CASE arguments (to run them) or --from-results FILE, not both")
    if args.screenshots:
        browser.find()  # before anything runs or is written
    history = History(args.history if args.history is not None else out / "history")
    upgrade_paths = upgrades.default_paths() if args.upgrades is None else args.upgrades
    ran: list[Case] | None = None
    if args.from_results:
        inputs = _from_files(args.from_results)
        _check_outputs(out, history)
    else:

        def before_runs() -> None:
            _check_outputs(out, history)
            _check_previous_run(history)

        inputs, ran = _fresh_results(args, before_runs)
    try:
        report = build(inputs, history, upgrade_paths)
        if ran is not None and localize is not None:
            report.origins = _origins(report, ran, localize)
        report.fuzz = fuzzing.read(args.fuzz if args.fuzz is not None else fuzzing.DEFAULT)
        page, summary = html_page.render(report), markdown.render(report)
    except RunnerError as err:
        if args.from_results:
            raise
        # Something changed under the history folder while the cases ran: keep what they made.
        kept = outputs.keep("report", dump(bundle([doc for doc, _ in inputs])))
        raise type(err)(f"{err}\nthe results of this run are kept in {kept}") from None
    results = dump(bundle([m.doc for m in report.machines]))
    files = [(out / "results.json", results), (out / "report.md", summary), (out / "report.html", page)]
    keep_as = None if args.from_results else [("report", results)]

    recorded = []
    try:
        with history.locked():
            entries = []
            for machine in report.machines:
                if machine.doc.partial:
                    continue
                where, text = history.planned(machine)
                recorded.append(where)
                if text is not None:
                    entries.append((where, text))
            outputs.write_or_keep(files + (history.marker() + entries if entries else []), "report", keep_as)
    except OSError as err:  # the history folder or its lock could not be made
        note = f"; the results are kept in {outputs.keep(*keep_as[0])}" if keep_as else ""
        raise Infrastructure(f"--history {history.folder}: {err.strerror or err}{note}") from None

    show(report.status())
    for name in REPORT_FILES:
        show(f"wrote {out / name}")
    for entry in recorded:
        show(f"history: {entry}")
    for machine in report.partial:
        show(f"history: not recorded: the results of {machine.label} are partial ({machine.doc.partial_reason})")
    if args.screenshots:
        for shot in browser.screenshots(out / "report.html", out / browser.SHOTS):
            show(f"screenshot: {shot.path}" + (f" ({shot.note})" if shot.note else ""))
    if report.exit_code:
        say(f"exit 1: see {out / 'report.md'}")
    return report.exit_code
