"""`python3 -m runner report`: run every case (or read results files), compare
each machine with its previous run in the history folder, and write
`report.html`, `report.md` and `results.json` into the output folder.

Everything that can fail on bad input (reading and validating results files,
the history folder and the previous runs, rendering) happens before the first
write. Then each file is replaced atomically (temporary file, fsync, rename):
the three report files first, the history entries last, so an interrupted run
leaves every file either as it was or complete, and never records a run whose
report was not written.

Exit codes: 0 nothing changed and every expectation holds; 1 otherwise;
2 bad input; 3 infrastructure (a framework or the probe missing).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from .. import cases as case_files
from ..argtypes import path
from ..atomic import write_text
from ..engine import check
from ..errors import BadInput
from ..model.results import ResultsDocument
from ..progress import ConsoleReporter
from ..results import bundle, dump, load_results
from . import browser, fuzzing, html_page, markdown, trend, upgrades
from .changes import changes
from .differences import differences
from .history import History
from .machines import Machine, group
from .model import Comparison, Report

DEFAULT_OUT = Path("reports")


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


def _fresh_results(refs: list[str]) -> list[tuple[ResultsDocument, str]]:
    doc = check(case_files.load_selected(refs), ConsoleReporter())
    return [(doc, "this run")]


def _from_files(paths: list[Path]) -> list[tuple[ResultsDocument, str]]:
    return [(doc, str(p)) for p in paths for doc in load_results(p)]


def _compare(history: History, machine: Machine) -> Comparison:
    previous = history.previous(machine)
    if previous is None:
        return Comparison(None, note=f"no earlier run of this machine in {history.folder}; nothing to compare with")
    before = previous.load()
    return Comparison(previous, changes(before, machine.doc), before.provenance)


def build(inputs: list[tuple[ResultsDocument, str]], history: History, upgrade_paths: list[Path]) -> Report:
    machines = group(inputs)
    generated = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    report = Report(machines, [_compare(history, m) for m in machines], generated)
    report.upgrades, report.unreadable_upgrades = upgrades.read(upgrade_paths)
    report.history = trend.load(history, machines)
    cases = report.cases()
    pairs = {case: report.pairs(case) for case in cases}
    report.differences = differences(machines, cases, pairs, report.history.all(), report.upgrades)
    return report


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    if out.exists() and not out.is_dir():
        raise BadInput(f"--out {out}: is a file, expected a folder")
    if args.from_results and args.cases:
        raise BadInput("give CASE arguments (to run them) or --from-results FILE, not both")
    if args.screenshots:
        browser.find()  # before anything runs or is written
    history = History(args.history if args.history is not None else out / "history")
    upgrade_paths = upgrades.default_paths() if args.upgrades is None else args.upgrades
    inputs = _from_files(args.from_results) if args.from_results else _fresh_results(args.cases)
    report = build(inputs, history, upgrade_paths)
    report.fuzz = fuzzing.read(args.fuzz if args.fuzz is not None else fuzzing.DEFAULT)
    page, summary = html_page.render(report), markdown.render(report)
    results = bundle([m.doc for m in report.machines])

    write_text(out / "results.json", dump(results))
    write_text(out / "report.md", summary)
    write_text(out / "report.html", page)
    recorded = [history.add(m) for m in report.machines]

    print(report.status())
    for name in ("report.html", "report.md", "results.json"):
        print(f"wrote {out / name}")
    for entry in recorded:
        print(f"history: {entry}")
    if args.screenshots:
        for shot in browser.screenshots(out / "report.html", out / browser.SHOTS):
            print(f"screenshot: {shot}")
    if report.exit_code:
        print(f"exit 1: see {out / 'report.md'}", file=sys.stderr)
    return report.exit_code
