"""`burn-torch-diff port FILE.py:CLASS --input SHAPE ...`: the command line (`configure`, `run`).

Exit codes: 0 the port agrees with PyTorch (forward, gradients, training curve); 1 it differs;
2 it cannot be ported (every reason, each with the user's file:line) or bad input; 3
infrastructure (the probe not built, a write that failed).
"""

from __future__ import annotations

import argparse
import ast
import json
import re

from ..argtypes import path, positive_int
from ..contract.ops import OPS, unsupported
from ..errors import BadInput, ExitCode
from ..escape import quote, terminal
from ..program import data as program_data
from ..program import syntax
from ..program.data import materialize
from ..program.ir import Settings, walk
from ..signals import show
from . import compare, convert, load, trace, write
from .trace import InputSpec, Refusal

HELP = (
    "port a user's PyTorch module to burn and check it: import FILE.py, build CLASS, trace its forward "
    "with torch.fx, run the training step under both frameworks from the same weights and data, and "
    "say where burn behaves differently. Importing FILE.py runs its code, as any Python import does: "
    "port only files you trust."
)
OPTIMIZERS = ("sgd", "adam", "adamw", "rmsprop")
SHAPE = re.compile(r"^(?P<dims>[1-9][0-9]{0,6}(?:[x,][1-9][0-9]{0,6}){0,3})(?::int:(?P<high>[1-9][0-9]{0,7}))?$")
MAX_STEPS = 100_000


def input_spec(text: str) -> InputSpec:
    m = SHAPE.match(text)
    if m is None:
        raise argparse.ArgumentTypeError(
            f"a shape such as 32x8 (1 to 4 dims), or 32:int:4 for integers in [0, 4); got {quote(text)}"
        )
    dims = tuple(int(d) for d in re.split(r"[x,]", m.group("dims")))
    high = m.group("high")
    return InputSpec(dims, "int", int(high)) if high else InputSpec(dims)


def optimizer_text(text: str) -> str:
    """`adamw(lr=1e-3)`: an optimizer of the language with number keywords, written back canonically."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        node = None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in OPTIMIZERS) or node.args:
        raise argparse.ArgumentTypeError(
            f'an optimizer call such as "adamw(lr=1e-3)" ({", ".join(OPTIMIZERS)} with keyword arguments); got {quote(text)}'
        )
    spec = OPS[node.func.id]
    parts = []
    for kw in node.keywords:
        value = kw.value
        negative = isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub)
        if negative:
            value = value.operand  # type: ignore[attr-defined]
        if kw.arg is None or spec.attr(kw.arg) is None or not isinstance(value, ast.Constant):
            valid = ", ".join(a.name for a in spec.attrs)
            raise argparse.ArgumentTypeError(
                f"{node.func.id}: keywords with number values, from {valid}; got {quote(text)}"
            )
        v = value.value
        if isinstance(v, bool):
            parts.append(f"{kw.arg}={v}")
        elif isinstance(v, (int, float)):
            parts.append(f"{kw.arg}={-v if negative else v!r}")
        else:
            raise argparse.ArgumentTypeError(f"{node.func.id}: {kw.arg} must be a number; got {quote(text)}")
    if not any(p.startswith("lr=") for p in parts):
        raise argparse.ArgumentTypeError(f"{node.func.id}: give lr= (burn has no default learning rate)")
    return f"{node.func.id}({', '.join(parts)})"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target", metavar="FILE.py:CLASS", help="the module: a Python file and a torch.nn.Module class in it"
    )
    parser.add_argument("--args", metavar="JSON", help="keyword arguments for the class, as a JSON object")
    parser.add_argument(
        "--input",
        dest="inputs",
        action="append",
        required=True,
        type=input_spec,
        metavar="SHAPE",
        help="one per forward argument, in order: 32x8 (float, standard normal) or 32:int:4 (integers in [0, 4))",
    )
    parser.add_argument(
        "--loss",
        default="cross_entropy",
        choices=sorted(convert.LOSSES),
        help="the loss of (output, target): class-index targets for cross_entropy and nll_loss, a float target "
        "of the output's shape for the others; `output`: forward returns the loss (default: cross_entropy)",
    )
    parser.add_argument("--classes", type=positive_int, metavar="N", help="classes (checked against the output)")
    parser.add_argument(
        "--optimizer",
        type=optimizer_text,
        default="adam(lr=0.001)",
        metavar="'adamw(lr=1e-3)'",
        help="the optimizer, as the program language writes it (default: adam(lr=0.001))",
    )
    parser.add_argument("--steps", type=positive_int, default=20, metavar="N", help="training steps (default 20)")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="seed of the module's initialization (torch.manual_seed) and of the inputs' data (default 0)",
    )
    parser.add_argument(
        "--weights", metavar="STATE_DICT.pt", help="initial weights, read with torch.load(weights_only=True)"
    )
    parser.add_argument(
        "--out",
        type=path,
        metavar="DIR",
        help="write the case file, the PyTorch script and the burn crate here (a new folder)",
    )


def _name(class_name: str) -> str:
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", class_name).lower()
    return "port_" + re.sub(r"[^a-z0-9_]", "_", snake)[:60]


def _burn_refusals(conv: convert.Conversion, parsed: object) -> list[Refusal]:
    out = []
    for st in walk(parsed.body):  # type: ignore[attr-defined]
        lacks = unsupported("burn", st.op, st.attrs)
        if lacks is not None:
            info = conv.lines.get(st.line)
            out.append(
                Refusal(info.where if info else None, "burn lacks", f"{info.user if info else st.op}: {lacks[1]}")
            )
    return out


def _refuse(target: str, refusals: list[Refusal]) -> int:
    show(f"{terminal(target)} cannot be ported ({len(refusals)} reason{'s' if len(refusals) != 1 else ''}):")
    for r in refusals:
        show(f"  {terminal(r.text())}")
    show("nothing was written")
    return int(ExitCode.BAD_INPUT)


def run(args: argparse.Namespace) -> int:
    if args.steps > MAX_STEPS:
        raise BadInput(f"--steps {args.steps}: at most {MAX_STEPS}")
    if args.out is not None and args.out.exists() and (not args.out.is_dir() or any(args.out.iterdir())):
        raise BadInput(f"--out {quote(str(args.out))}: exists and is not an empty folder; give a new one")
    loaded = load.load(args.target, args.args, args.weights, seed=args.seed)
    traced = trace.trace(loaded.module, list(args.inputs), loaded.file, seed=args.seed)
    if traced.graph is None:
        return _refuse(args.target, traced.refusals)
    conv = convert.convert(
        traced, list(args.inputs), loss=args.loss, classes=args.classes, optimizer=args.optimizer, steps=args.steps
    )
    if conv.refusals:
        return _refuse(args.target, conv.refusals)
    where = f"the port of {loaded.class_name}"
    try:
        parsed = syntax.parse(conv.source, where=where)
    except BadInput as err:
        return _refuse(args.target, [Refusal(None, "language lacks", str(err))])
    lacks = _burn_refusals(conv, parsed)
    if lacks:
        return _refuse(args.target, lacks)
    parsed = program_data.with_values(parsed, conv.arrays, where)
    verdicts = compare.run(conv, parsed, args.seed, optimizer=args.optimizer, loss=args.loss)
    report = _report(args, loaded, conv, verdicts)
    show(report)
    if args.out is not None:
        name = _name(loaded.class_name)
        loop_steps = args.steps
        program = materialize(parsed, args.seed, Settings(checkpoints=[loop_steps]))
        title = f"{loaded.class_name} ({loaded.file.name}) ported to burn: {'agrees' if verdicts.agree else 'differs'}"
        burn_text = " ".join(_verdict_lines(verdicts))
        fix = "; ".join(e.line() for e in verdicts.explanations) or (
            "nothing: the port agrees" if verdicts.agree else "no catalogue case explains it yet: see the parting point"
        )
        case = write.case_text(
            name, conv.source, f"{name}.npz", verdicts, title, burn_text, fix, _largest_rel(verdicts)
        )
        full_report = report + "\n\n## Names\n\n" + write.mapping(conv) + "\n"
        result = json.dumps(
            {
                "target": args.target,
                "agree": verdicts.agree,
                "forward": verdicts.forward,
                "gradients": verdicts.gradients,
                "update": verdicts.update,
                "curve": verdicts.curve,
                "first_parting_step": verdicts.first_parting_step,
                "parting": verdicts.parting.text() if verdicts.parting else None,
                "parting_module": verdicts.parting.user if verdicts.parting else None,
                "explained_by": [e.case for e in verdicts.explanations],
                "outcomes": verdicts.outcomes,
                "losses": verdicts.losses,
                "modules": conv.modules,
            },
            indent=1,
        )
        about = f"`{loaded.class_name}.forward` of {loaded.file.name}, as the port converted it."
        forward = write.forward_region(conv, program, about)
        files = write.write_all(args.out, name, case, conv.arrays, program, full_report, title, result, forward)
        show(f"written under {terminal(str(args.out))}: {len(files)} files")
        show(f"  the case: python3 -m runner check {terminal(str(args.out / (name + '.toml')))}")
        show(f"  the burn crate: cd {terminal(str(args.out / (name + '_burn')))} && cargo run --release")
    if verdicts.failure and verdicts.outcomes["torch"] != "ok":
        return int(ExitCode.BAD_INPUT)
    return int(ExitCode.OK if verdicts.agree else ExitCode.FAILED)


def _largest_rel(v: compare.Verdicts) -> float:
    t, b = v.losses.get("torch"), v.losses.get("burn")
    if not t or not b:
        return 0.0
    return max((abs(x - y) / max(abs(x), abs(y), 1e-30) for x, y in zip(t, b)), default=0.0)


def _verdict_lines(v: compare.Verdicts) -> list[str]:
    lines = [
        f"Forward pass at step 1: {v.forward}.",
        f"Gradients at step 1: {v.gradients}.",
        f"Parameters after the first optimizer step: {v.update}.",
    ]
    curve = f"Training curve: {v.curve}"
    if v.first_parting_step is not None:
        curve += f" from step {v.first_parting_step} (largest relative difference of a loss {_largest_rel(v):.2g})"
    lines.append(curve + ".")
    if v.failure:
        lines.append(f"A run stopped: {v.failure}.")
    if v.parting is not None:
        lines.append(f"First parting point: {v.parting.text()}.")
    for e in v.explanations:
        lines.append(f"Explained by: {e.line()}.")
    return lines


def _report(args: argparse.Namespace, loaded: load.Loaded, conv: convert.Conversion, v: compare.Verdicts) -> str:
    n_params = sum(1 for k in conv.params)
    head = (
        f"port {loaded.file.name}:{loaded.class_name}: {len(conv.modules)} modules, {n_params} tensors, "
        f"{len(conv.lines)} forward statements; {args.steps} steps of {args.optimizer}, loss {args.loss}"
    )
    lines = [terminal(head)]
    lines.append(f"  verdict: {'the port agrees with PyTorch' if v.agree else 'the port differs from PyTorch'}")
    for text in _verdict_lines(v):
        lines.append("  " + terminal(text))
    t, b = v.losses.get("torch"), v.losses.get("burn")
    if t and b:
        shown = min(len(t), 6)
        lines.append("  losses torch: " + " ".join(f"{x:.6g}" for x in t[1:shown]))
        lines.append("  losses burn:  " + " ".join(f"{x:.6g}" for x in b[1:shown]))
    return "\n".join(lines)
