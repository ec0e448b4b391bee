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
from ..argtypes import add_measurement_options, path
from ..atomic import write_text
from ..engine import check
from ..errors import BadInput
from ..model.results import ResultsDocument
from ..progress import ConsoleReporter
from ..results import bundle, dump, load_results
from . import html_page, markdown
from .changes import changes
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
    add_measurement_options(parser)


def _fresh_results(args: argparse.Namespace) -> list[tuple[ResultsDocument, str]]:
    doc = check(
        case_files.load_selected(args.cases),
        ConsoleReporter(),
        repeat=args.repeat,
        jobs=args.jobs,
        controls=args.noise_controls,
    )
    return [(doc, "this run")]


def _from_files(paths: list[Path]) -> list[tuple[ResultsDocument, str]]:
    return [(doc, str(p)) for p in paths for doc in load_results(p)]


def _compare(history: History, machine: Machine) -> Comparison:
    previous = history.previous(machine)
    if previous is None:
        return Comparison(None, note=f"no earlier run of this machine in {history.folder}; nothing to compare with")
    before = previous.load()
    return Comparison(previous, changes(before, machine.doc), before.provenance)


def build(inputs: list[tuple[ResultsDocument, str]], history: History) -> Report:
    machines = group(inputs)
    generated = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return Report(machines, [_compare(history, m) for m in machines], generated)


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    if out.exists() and not out.is_dir():
        raise BadInput(f"--out {out}: is a file, expected a folder")
    if args.from_results and args.cases:
        raise BadInput("give CASE arguments (to run them) or --from-results FILE, not both")
    history = History(args.history if args.history is not None else out / "history")
    inputs = _from_files(args.from_results) if args.from_results else _fresh_results(args)
    report = build(inputs, history)
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
    if report.exit_code:
        print(f"exit 1: see {out / 'report.md'}", file=sys.stderr)
    return report.exit_code
