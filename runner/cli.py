"""`burn-torch-diff ...` (or `python3 -m runner ...`): the command line.

Subcommands: `check` (here), `report` (runner.report.command),
`upgrade-check` (runner.upgrade.command), `fuzz` (runner.fuzz.command) and `port`
(runner.port.command). Each command module has
`configure(parser)` and `run(args) -> int`.

Exit codes: 0 every expectation holds (or nothing changed); 1 one does not (or
something changed); 2 bad input (case file, arguments, an output that cannot
be written); 3 infrastructure (probe not built, framework missing, build
broken, a write that failed after the runs); 128 + N when signal N (SIGINT
130, SIGTERM 143, SIGHUP 129) stopped the command, with the completed runs kept.
"""

from __future__ import annotations

import argparse

from . import cases as case_files
from . import outputs
from .argtypes import Parser, add_measurement_options, path, positive_int, timeout_seconds
from .engine import check
from .errors import ExitCode, Interrupted, RunnerError
from .escape import terminal
from .frameworks import FRAMEWORKS
from .fuzz import command as fuzz_command
from .fuzz import origins as fuzz_origins
from .port import command as port_command
from .progress import ConsoleReporter
from .report import command as report_command
from .results import dump, keep_partial
from .signals import say, show, stop_on_signals
from .terminal import summary
from .upgrade import command as upgrade_command

PROG = "burn-torch-diff"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = Parser(prog=prog, description=(__doc__ or "").split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "check",
        help="run cases under torch and burn and check their expectations",
        description="Run every selected run of each case in its own worker process, "
        "then check the case's expectations and pairs.",
    )
    p.add_argument(
        "cases",
        nargs="*",
        metavar="CASE",
        help="case name (file in cases/) or path to a case file; default: every case",
    )
    p.add_argument("--framework", action="append", choices=FRAMEWORKS, help="only runs of this framework (repeatable)")
    p.add_argument("--mode", action="append", metavar="M", help="only runs of this mode (repeatable)")
    p.add_argument(
        "--steps", type=positive_int, metavar="N", help="override the case's step count (windows must still fit)"
    )
    p.add_argument(
        "--timeout",
        type=timeout_seconds,
        metavar="S",
        help="per-run timeout in seconds (default: the case's execution.timeout_s)",
    )
    p.add_argument("--json", type=path, metavar="PATH", help="write the results document here (atomically)")
    add_measurement_options(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no per-checkpoint progress lines")
    p.set_defaults(handler=cmd_check)
    for name, module, help_text in (
        ("report", report_command, "nightly differential report: HTML and Markdown, history, changes"),
        ("upgrade-check", upgrade_command, "run every case against another burn release and classify what changed"),
        ("fuzz", fuzz_command, "generate programs, run them under both frameworks, shrink and record new divergences"),
    ):
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        module.configure(sub_parser)
        sub_parser.set_defaults(handler=module.run)
        if module is report_command:
            # The report asks the fuzzer's localizer where training curves start to part.
            sub_parser.set_defaults(handler=lambda args: report_command.run(args, localize=fuzz_origins.localize))
    port = sub.add_parser(
        "port", help="port a user's PyTorch module to burn and check it", description=port_command.HELP
    )
    port_command.configure(port)
    port.set_defaults(handler=port_command.run)
    return parser


def cmd_check(args: argparse.Namespace) -> int:
    cases = case_files.load_selected(
        args.cases, steps=args.steps, timeout=args.timeout, frameworks=args.framework, modes=args.mode
    )
    if args.json:
        outputs.check_file(args.json, "--json")
    try:
        doc = check(
            cases,
            ConsoleReporter(verbose=not args.quiet),
            repeat=args.repeat,
            jobs=args.jobs,
            controls=args.noise_controls,
        )
    except Interrupted as stop:
        keep_partial(stop, "check", args.json)
        raise
    if args.json:
        text = dump(doc)
        outputs.write_or_keep([(args.json, text)], "--json", keep_as=[("check", text)])
    show(summary(doc))
    if args.json:
        show(f"results written to {terminal(args.json)}")
    return ExitCode.OK if doc.summary.failed == 0 else ExitCode.FAILED


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    args = build_parser(prog).parse_args(argv)
    try:
        with stop_on_signals():
            code: int = args.handler(args)
        return code
    except RunnerError as err:
        say(f"error: {err}")
        return err.exit_code
    except KeyboardInterrupt as err:
        stop = Interrupted.of(err)
        say(f"interrupted ({stop.name})")
        return stop.exit_code
