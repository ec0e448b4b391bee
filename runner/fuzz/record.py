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
from pathlib import Path
from typing import Any

from ..atomic import write_text
from ..program import data as program_data
from ..program import render_torch, syntax
from ..program.ir import ParsedProgram
from ..program.rust.crate import write_reproducer
from .campaign import Found
from .generate import LOOP_ITERATIONS
from .judge import GROWS, GROWTH_WARMUP, GROWTH_WINDOW


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


def case_text(found: Found, name: str, runs: dict[str, Any], seed: int) -> str:
    source = syntax.unparse(found.program).strip("\n")
    relation, props = _property(found)
    today = dt.date.today().isoformat()
    lines = [
        f"# Found by `burn-torch-diff fuzz --seed {seed}` on {today}: a divergence no case had written down.",
        "# Judge it (a burn bug, a torch quirk, or a documented semantic difference), write the [about]",
        "# section from what you find, and add the difference to runner/fuzz/known.py if it is documented.",
        f"name = {_toml_str(name)}",
        'kind = "program"',
        f"description = {_toml_str(_summary(found))}",
        "",
        "[about]",
        f"title = {_toml_str('Found by the fuzzer: ' + found.signature)}",
        f"torch = {_toml_str('torch: ' + str(runs['torch']))}",
        f"burn = {_toml_str('burn 0.22.1: ' + str(runs['burn']))}",
        'fix = "Not judged yet."',
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
            f'expect = {{ outcome = "{runs[fw]["outcome"]}" }}',
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


def write(found: Found, folder: Path, seed: int, runs: dict[str, Any]) -> dict[str, str]:
    """The case file and its reproducers; returns what was written (kind -> path)."""
    name = slug(found)
    program = program_data.materialize(found.program, seed=0)
    written: dict[str, str] = {}
    case = folder / f"{name}.toml"
    write_text(case, case_text(found, name, runs, seed))
    written["case"] = str(case)
    repro = folder / name
    try:
        script = render_torch.render(program, title=f"{name}: the PyTorch side of a divergence found by the fuzzer")
        write_text(repro / "torch_repro.py", script)
        written["torch"] = str(repro / "torch_repro.py")
    except ValueError as err:
        written["torch"] = f"not written: {err}"
    try:
        write_reproducer(program, repro / "rust", name.replace("-", "_"))
        written["rust"] = str(repro / "rust")
    except ValueError as err:
        written["rust"] = f"not written: {err}"
    return written


def program_of(case: Path) -> ParsedProgram:
    """The program a found case holds (for replays)."""
    source = tomllib.loads(case.read_text()).get("program", {}).get("source")
    if not isinstance(source, str):
        raise ValueError(f"{case}: no [program] source")
    return syntax.parse(source, where=str(case))
