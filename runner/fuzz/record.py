"""A found divergence as a case file (`cases/found/NAME.toml`, with expectations
that record what was observed) and standalone reproducers beside it: a PyTorch
script and a Rust program against burn 0.22.1 (`cases/found/NAME/`), ready to
attach to an upstream report."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..atomic import write_text
from ..fmt import short
from ..model.case import UNJUDGED_FIX
from ..program import data as program_data
from ..program import render_torch, syntax
from ..program.ir import ParsedProgram
from ..program.rust.crate import write_reproducer
from .campaign import Found
from .generate import LOOP_ITERATIONS
from .judge import GROWS, GROWTH_WARMUP, GROWTH_WINDOW


@dataclass(frozen=True)
class RunSummary:
    """What one framework did with a found program: its outcome, and where it stopped."""

    outcome: str
    failure: str | None = None  # `sum (op 3): message`

    def text(self) -> str:
        return self.outcome if self.failure is None else f"{self.outcome} at {self.failure}"


@dataclass(frozen=True)
class Written:
    """The files written for a found divergence (a reproducer not written: why, in its place)."""

    case: str
    torch: str
    rust: str


# What a divergence's class is about, as a sentence's subject.
_SUBJECTS = {
    "status": "the outcome",
    "growth": "the loop's step time (last over reference window)",
    "values": "the values of {label}",
    "grads": "the gradient of {label}",
    "flags": "the autodiff flags of {label}",
    "gradcheck": "the gradient of {param} (against float64 finite differences)",
}


def observed(found: Found) -> tuple[str, str, str]:
    """What differs, and each side's value, in words: (`the values of 'v3'`, torch's, burn's)."""
    d = found.divergence
    subject = _SUBJECTS.get(d.cls, f"{d.cls} of {{label}}").format(
        label=repr(d.label), param=repr(d.detail.get("param"))
    )
    a, b = d.detail.get("a", d.detail.get("torch")), d.detail.get("b", d.detail.get("burn"))
    return subject, short(str(a), 200), short(str(b), 200)


def slug(found: Found) -> str:
    digest = hashlib.sha256(found.signature.encode()).hexdigest()[:8]
    ops = re.sub(r"[^a-z0-9]+", "-", found.signature.split(":", 1)[1].lower()).strip("-")
    return f"{found.divergence.cls}-{ops[:40].rstrip('-')}-{digest}"


def _toml_str(text: str) -> str:
    return json.dumps(text)


def _property(found: Found) -> tuple[str, list[str]]:
    d = found.divergence
    if d.cls == "status":
        return "differ", ["outcome"]
    if d.cls == "growth":
        return "differ", ["grows"]
    if d.cls == "gradcheck":
        param = str(d.detail.get("param") or "")
        return "differ", [f"grads:{param}"] if param else []
    return "differ", [f"{d.cls}:{d.label}"]


def _summary(found: Found) -> str:
    d = found.divergence
    a, b = d.detail.get("a", d.detail.get("torch")), d.detail.get("b", d.detail.get("burn"))
    where = f" at {d.label!r}" if d.label else ""
    flaky = " (flaky: did not fail again when replayed)" if found.flaky else ""
    return f"{d.cls}{where}{flaky}: torch {a}; burn {b}"[:600]


def case_text(found: Found, name: str, runs: dict[str, RunSummary], seed: int) -> str:
    source = syntax.unparse(found.program).strip("\n")
    relation, props = _property(found)
    today = dt.date.today().isoformat()
    subject, torch_value, burn_value = observed(found)
    title = short(f"{subject[0].upper()}{subject[1:]} differs: PyTorch {torch_value}, burn {burn_value}", 200)
    torch_text = f"PyTorch ran the program: {runs['torch'].text()}; {subject} was {torch_value}."
    burn_text = f"burn 0.22.1 ran the program: {runs['burn'].text()}; {subject} was {burn_value}."
    lines = [
        f"# Found by `burn-torch-diff fuzz --seed {seed}` on {today}: a divergence no case had written down.",
        "# Judge it (a burn bug, a torch quirk, or a documented semantic difference), write the [about]",
        "# section from what you find (then drop `judged = false`), and add the difference to",
        "# runner/fuzz/known.py if it is documented.",
        f"name = {_toml_str(name)}",
        'kind = "program"',
        f"description = {_toml_str(_summary(found))}",
        "",
        "[about]",
        f"title = {_toml_str(title)}",
        f"torch = {_toml_str(torch_text)}",
        f"burn = {_toml_str(burn_text)}",
        f"fix = {_toml_str(UNJUDGED_FIX)}",
        "judged = false",
        f"sources = [{_toml_str('fuzz signature ' + found.signature)}]",
        "",
        "[program]",
        "seed = 0",
        f'source = """\n{source}\n"""',
    ]
    if found.divergence.cls == "growth":
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
    for fw in ("torch", "burn"):
        lines += [
            "",
            "[[runs]]",
            f'framework = "{fw}"',
            'mode = "main"',
            f"expect = {{ outcome = {_toml_str(runs[fw].outcome)} }}",
        ]
    if props:
        lines += [
            "",
            "[[pairs]]",
            'a = "torch/main"',
            'b = "burn/main"',
            f"{relation} = {json.dumps(props)}",
            f"reason = {_toml_str('found by the fuzzer: ' + _summary(found))}",
        ]
    return "\n".join(lines) + "\n"


def write(found: Found, folder: Path, seed: int, runs: dict[str, RunSummary]) -> Written:
    """The case file and its reproducers (`runs`: what each framework did with the program)."""
    name = slug(found)
    program = program_data.materialize(found.program, seed=0)
    case = folder / f"{name}.toml"
    write_text(case, case_text(found, name, runs, seed))
    repro = folder / name
    try:
        script = render_torch.render(program, title=f"{name}: the PyTorch side of a divergence found by the fuzzer")
        write_text(repro / "torch_repro.py", script)
        torch = str(repro / "torch_repro.py")
    except ValueError as err:
        torch = f"not written: {err}"
    try:
        write_reproducer(program, repro / "rust", name.replace("-", "_"))
        rust = str(repro / "rust")
    except ValueError as err:
        rust = f"not written: {err}"
    return Written(str(case), torch, rust)


def program_of(case: Path) -> ParsedProgram:
    """The program a found case holds (for replays)."""
    source = tomllib.loads(case.read_text()).get("program", {}).get("source")
    if not isinstance(source, str):
        raise ValueError(f"{case}: no [program] source")
    return syntax.parse(source, where=str(case))
