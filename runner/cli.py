"""`python3 -m runner ...`: the command line.

Subcommands: `check` (here), `report` (runner.report.command) and
`upgrade-check` (runner.upgrade.command). Each command module has
`configure(parser)` and `run(args) -> int`.

Exit codes: 0 every expectation holds (or nothing changed); 1 one does not (or
something changed); 2 bad input (case file, arguments); 3 infrastructure
(probe not built, framework missing, build broken).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from . import cases as case_files
from .atomic import write_json
from .engine import check
from .errors import RunnerError
from .frameworks import FRAMEWORKS
from .terminal import ConsoleReporter, summary


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # exit 2 with the usage, no traceback
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python3 -m runner", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("check", help="run cases under torch and burn and check their expectations",
                       description="Run every selected run of each case in its own worker process, "
                                   "then check the case's expectations and pairs.")
    p.add_argument("cases", nargs="*", metavar="CASE",
                   help="case name (file in cases/) or path to a case file; default: every case")
    p.add_argument("--framework", action="append", choices=FRAMEWORKS,
                   help="only runs of this framework (repeatable)")
    p.add_argument("--mode", action="append", metavar="M", help="only runs of this mode (repeatable)")
    p.add_argument("--steps", type=positive_int, metavar="N",
                   help="override the case's step count (windows must still fit)")
    p.add_argument("--timeout", type=positive_float, metavar="S",
                   help="per-run timeout in seconds (default: the case's execution.timeout_s)")
    p.add_argument("--json", type=Path, metavar="PATH", help="write the results document here (atomically)")
    p.add_argument("-q", "--quiet", action="store_true", help="no per-checkpoint progress lines")
    p.set_defaults(handler=cmd_check)
    for name, (module, help_text) in EXTRA_COMMANDS.items():
        try:
            command = importlib.import_module(module)
        except ModuleNotFoundError as err:
            if not err.name or not module.startswith(err.name):
                raise
            continue  # not written yet
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        command.configure(sub_parser)
        sub_parser.set_defaults(handler=command.run)
    return parser


# name -> (module with configure(parser) and run(args) -> int, one-line help)
EXTRA_COMMANDS = {
    "report": ("runner.report.command", "nightly differential report: HTML and Markdown, history, changes"),
    "upgrade-check": ("runner.upgrade.command", "run every case against another burn release and classify what changed"),
}


def cmd_check(args: argparse.Namespace) -> int:
    cases = case_files.load_selected(args.cases, steps=args.steps, timeout=args.timeout,
                                     frameworks=args.framework, modes=args.mode)
    doc = check(cases, ConsoleReporter(verbose=not args.quiet))
    if args.json:
        write_json(args.json, doc)
    print(summary(doc))
    if args.json:
        print(f"results written to {args.json}")
    return 0 if doc["summary"]["failed"] == 0 else 1


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except RunnerError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
