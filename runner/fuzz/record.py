"""A root cause as a case file (`cases/found/NAME.toml`) and standalone reproducers beside it:
a PyTorch script and a Rust program against burn 0.22.1 (`cases/found/NAME/`), ready to
attach to an upstream report.

One case per root cause, named after its signature: its `minimal` variant is the smallest
program that shows the cause (the operation alone, on the inputs that showed it), its
`generated` variant the program the fuzzer generated, kept as context. `[about]` says what
was observed in words and numbers and awaits a person's judgement (`judged = false`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import write_text
from ..model.case import UNJUDGED_FIX
from ..program import data as program_data
from ..program import render_torch, syntax
from ..program.ir import ParsedProgram, walk
from ..program.rust.crate import write_reproducer
from ..wording import short
from .generate import LOOP_ITERATIONS
from .instrument import instrument
from .judge import GROWS, GROWTH_WARMUP, GROWTH_WINDOW
from .localize import Cause

ORACLE_WORDS = {
    "values": "The value",
    "grads": "The gradient",
    "flags": "The autodiff flags",
    "status": "The outcome",
    "growth": "The loop's step time",
}


@dataclass(frozen=True)
class Written:
    """The files written for a root cause (a reproducer not written: why, in its place)."""

    case: str
    torch: str
    rust: str


def slug(cause: Cause) -> str:
    digest = hashlib.sha256(cause.signature.encode()).hexdigest()[:8]
    words = re.sub(r"[^a-z0-9]+", "-", f"{cause.oracle} {cause.op} {cause.attrs}".lower()).strip("-")
    return f"{words[:48].rstrip('-')}-{digest}"


def _toml(text: str) -> str:
    return json.dumps(text)


def _label(cause: Cause) -> str | None:
    """The observation the pair compares in the minimal program."""
    labels = [str(s.attrs.get("label")) for s in walk(cause.program.body) if s.op == "observe"]
    label = cause.detail.get("label")
    if isinstance(label, str) and label in labels:
        return label
    for wanted in ("out", "a0", "p0"):
        if wanted in labels:
            return wanted
    return labels[0] if labels else None


def minimal_program(cause: Cause) -> ParsedProgram:
    """The case's minimal program; a cause found at an observation of the rewritten program
    (`@K`) keeps that one observation in it."""
    label = cause.detail.get("label")
    if isinstance(label, str) and label.startswith("@"):
        rewritten, _ = instrument(cause.program)

        def keep(body: list[dict[str, Any]]) -> list[dict[str, Any]]:
            out = []
            for st in body:
                mark = str(st.get("attrs", {}).get("label", "")) if st["op"] == "observe" else ""
                if mark.startswith("@") and mark != label:
                    continue
                if st.get("body") is not None:
                    st = {**st, "body": keep(st["body"])}
                out.append(st)
            return out

        try:
            return ParsedProgram.model_validate(
                {
                    "tensors": [t.model_dump() for t in rewritten.tensors],
                    "modules": [m.model_dump() for m in rewritten.modules],
                    "body": _renumbered(keep([s.model_dump() for s in rewritten.body])),
                }
            )
        except ValueError:
            return rewritten
    return cause.program


def _renumbered(body: list[dict[str, object]]) -> list[dict[str, object]]:
    counter = iter(range(10**7))

    def number(st: dict[str, object]) -> dict[str, object]:
        i = next(counter)
        out = {**st, "index": i, "line": i}
        if st.get("body") is not None:
            out["body"] = [number(c) for c in st["body"]]  # type: ignore[attr-defined]
        else:
            out.pop("body", None)
        return out

    return [number(s) for s in body]


def _loop_count(program: ParsedProgram) -> int:
    loop = next((s for s in program.body if s.op == "repeat"), None)
    count = loop.attrs.get("count") if loop is not None else 0
    return count if isinstance(count, int) else 0


def _property(cause: Cause, program: ParsedProgram) -> list[str]:
    if cause.oracle == "status":
        return ["outcome"]
    if cause.oracle == "growth":
        return ["grows"]
    label = cause.detail.get("label")
    if not isinstance(label, str):
        label = _label(cause)
    return [f"{cause.oracle}:{label}"] if label else []


def case_text(cause: Cause, name: str, seed: int, outcomes: dict[str, str]) -> str:
    minimal = minimal_program(cause)
    props = _property(cause, minimal)
    today = dt.date.today().isoformat()
    noun = ORACLE_WORDS.get(cause.oracle, cause.oracle)
    shown = cause.attrs and cause.attrs != "in-program" and cause.oracle != "status"
    where = f"`{cause.op}`" + (f" with {cause.attrs}" if shown else "")
    title = short(f"{noun} of {where} differs ({cause.side} side): {cause.words}", 200)
    a, b = cause.detail.get("a", cause.detail.get("torch")), cause.detail.get("b", cause.detail.get("burn"))
    torch_text = (
        f"PyTorch, on the minimal program: {outcomes.get('torch', '?')}; {noun.lower()} was {short(str(a), 300)}."
    )
    burn_text = (
        f"burn 0.22.1, on the minimal program: {outcomes.get('burn', '?')}; {noun.lower()} was {short(str(b), 300)}."
    )
    region = "" if cause.region in ("-", "all") else f" It shows for inputs at {cause.region.replace('+', ' and ')}."
    lines = [
        f"# Found by `burn-torch-diff fuzz --seed {seed}` on {today} (program {cause.program_index} of the",
        "# campaign): a root cause no case had written down. Judge it (a burn bug, a torch quirk, or a",
        "# documented semantic difference), write [about] from what you find (then drop `judged = false`),",
        "# and add the difference to runner/fuzz/known.py if it is documented. The variant `minimal` is",
        "# the smallest program that shows it; `generated` is the program the fuzzer generated.",
        f"name = {_toml(name)}",
        'kind = "program"',
        f"description = {_toml(short(cause.words + region, 600))}",
        "",
        "[about]",
        f"title = {_toml(title)}",
        f"torch = {_toml(torch_text)}",
        f"burn = {_toml(burn_text)}",
        f"fix = {_toml(UNJUDGED_FIX)}",
        "judged = false",
        f"sources = [{_toml('fuzz root cause ' + cause.signature)}]",
        "",
        "[program]",
        "seed = 0",
        "",
        "[program.variants]",
        f'minimal = """\n{syntax.unparse(minimal).strip(chr(10))}\n"""',
    ]
    variants = ["minimal"]
    if _loop_count(minimal) == _loop_count(cause.original):
        lines.append(f'generated = """\n{syntax.unparse(cause.original).strip(chr(10))}\n"""')
        variants.append("generated")
    else:  # a case's variants share one timed loop: the generated program is kept as a comment
        lines.insert(
            -3,
            "# The generated program, as context (its timed loop is not the minimal program's):\n"
            + "\n".join(f"#   {line}" for line in syntax.unparse(cause.original).strip("\n").splitlines()),
        )
    if cause.oracle == "growth":
        lines += [
            "",
            "[windows]",
            f"warmup = {GROWTH_WARMUP}",
            f"reference = {GROWTH_WINDOW}",
            f"last = {min(GROWTH_WINDOW, LOOP_ITERATIONS - GROWTH_WARMUP - GROWTH_WINDOW)}",
            "",
            "[thresholds]",
            f"grows_ratio = {GROWS}",
        ]
    for variant in variants:
        for fw in ("torch", "burn"):
            outcome = outcomes.get(fw, "ok") if variant == "minimal" else outcomes.get(f"generated/{fw}", "ok")
            lines += [
                "",
                "[[runs]]",
                f'framework = "{fw}"',
                f'mode = "{variant}"',
                f"expect = {{ outcome = {_toml(outcome)} }}",
            ]
    if props:
        lines += [
            "",
            "[[pairs]]",
            'a = "torch/minimal"',
            'b = "burn/minimal"',
            f"differ = {json.dumps(props)}",
            f"reason = {_toml(short('found by the fuzzer: ' + cause.words, 600))}",
        ]
    return "\n".join(lines) + "\n"


def write(cause: Cause, folder: Path, seed: int, outcomes: dict[str, str]) -> Written:
    """The case file and its reproducers (`outcomes`: each framework's outcome on the minimal
    program, and on the generated one as `generated/torch`, `generated/burn`)."""
    name = slug(cause)
    program = program_data.materialize(minimal_program(cause), seed=0)
    case = folder / f"{name}.toml"
    write_text(case, case_text(cause, name, seed, outcomes))
    repro = folder / name
    try:
        script = render_torch.render(program, title=f"{name}: the PyTorch side of a root cause found by the fuzzer")
        write_text(repro / "torch_repro.py", script)
        torch = str(repro / "torch_repro.py")
    except (ValueError, AssertionError) as err:
        torch = f"not written: {err}"
    try:
        write_reproducer(program, repro / "rust", name.replace("-", "_"))
        rust = str(repro / "rust")
    except (ValueError, AssertionError) as err:  # an operation the renderer has no Rust for yet
        rust = f"not written: {err}"
    return Written(str(case), torch, rust)


def program_of(case: Path, variant: str = "minimal") -> ParsedProgram:
    """A program a found case holds (for replays): the variant asked for, else the case's single
    program, else its first variant (a case judged by hand may name its variants for what they show;
    its reproducer is written from the first)."""
    program = tomllib.loads(case.read_text()).get("program", {})
    variants = program.get("variants", {})
    source = variants.get(variant) or program.get("source") or next(iter(variants.values()), None)
    if not isinstance(source, str):
        raise ValueError(f"{case}: no [program] variant {variant!r}")
    return syntax.parse(source, where=str(case))
