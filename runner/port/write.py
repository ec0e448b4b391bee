"""What `port` writes under `--out`, all or nothing: the files go into a folder beside it and
are renamed into place when every one is written.

- `NAME.toml`, the program as a case file (`check`, `report` and `upgrade-check` take it by its
  path), with `NAME.npz`, the module's values (`[program] data`): its pair claims what this
  run showed (`same` when the curves agree, `differ` where they part);
- `NAME_torch.py`, the program as a standalone PyTorch script (`runner.program.render_torch`);
- `NAME_burn/`, a cargo crate with the burn port (`runner.program.rust`): the modules are the
  fields of its `#[derive(Module)] struct Model`, named after the user's modules
  (`encoder.layers.0.norm1` -> `encoder_layers_0_norm1`), the statements converted from the
  user's `forward` its method `Model::forward` (parameters named after the forward's), the
  training loop its `main`, which calls `model.forward(..)` (`forward_region`; where the
  statements cannot be a method they stay inline, and main.rs and REPORT.md say why);
- `REPORT.md`, what the command printed, with the map from the program's names to the user's;
  `RESULT.json`, the verdicts and every step's loss on each side (torch, burn, torch in float64).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import tomli_w

from ..errors import BadInput, Infrastructure
from ..escape import quote, terminal
from ..program import render_torch
from ..program.ir import Program
from ..program.rust.crate import write_reproducer
from ..program.rust.forward import ForwardRegion
from .compare import Verdicts
from .convert import Conversion


def case_text(
    name: str, source: str, data_file: str, verdicts: Verdicts, title: str, burn_text: str, fix: str, rel: float
) -> str:
    pair: dict[str, object] = {"a": "torch/main", "b": "burn/main"}
    if verdicts.outcomes["torch"] != verdicts.outcomes["burn"]:
        pair["differ"] = ["outcome"]
        pair["reason"] = "the port stops where PyTorch does not (or the other way round)"
    elif verdicts.curve == "differ":
        pair["same"] = ["outcome"]
        pair["differ"] = ["values:losses"]
        pair["reason"] = "the port's training curve parts from PyTorch's (see [about])"
    else:
        pair["same"] = ["outcome", "values:losses"]
        pair["reason"] = "the port's training curve follows PyTorch's"
    program: dict[str, object] = {"source": source, "data": data_file}
    if verdicts.curve == "agree" and rel > 1e-4:
        # the default tolerance, widened to 3x the largest relative difference this run measured
        program["tolerance"] = {"abs": 1e-5, "rel": float(f"{3 * rel:.2g}")}
    doc = {
        "name": name,
        "kind": "program",
        "description": f"Written by `burn-torch-diff port`: {title}.",
        "about": {
            "title": title[:200],
            "torch": "The user's module as PyTorch runs it, from its own initial weights.",
            "burn": burn_text,
            "fix": fix,
            "judged": False,
        },
        "program": program,
        "runs": [{"framework": "torch", "mode": "main"}, {"framework": "burn", "mode": "main"}],
        "pairs": [pair],
    }
    return tomli_w.dumps(doc, multiline_strings=True)


def write_all(
    out: Path,
    name: str,
    case: str,
    arrays: dict[str, np.ndarray],
    program: Program,
    report: str,
    title: str,
    result: str,
    forward: ForwardRegion | None = None,
) -> list[Path]:
    """Everything under `out` (created; it must not hold anything yet), or nothing. `forward`:
    the statements of the user's forward, the crate's `Model::forward` (`forward_region`)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BadInput(f"--out {quote(str(out))}: exists and is not an empty folder; give a new one")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        (staging / f"{name}.toml").write_text(case)
        with open(staging / f"{name}.npz", "wb") as f:
            np.savez(f, **arrays)  # type: ignore[arg-type]
        (staging / f"{name}_torch.py").write_text(render_torch.render(program, title=title))
        notes: list[str] = []
        write_reproducer(program, staging / f"{name}_burn", name, title=title, forward=forward, notes=notes)
        if forward is not None and not notes:
            report += (
                f"\n## The burn crate\n\n`{name}_burn/src/main.rs`: your forward is the method `Model::forward`, "
                "which the training loop in `main` calls.\n"
            )
        for note in notes:
            report += (
                f"\n## The burn crate\n\n`{name}_burn/src/main.rs`: your forward's statements are inline in the "
                f"training loop in `main`, not a method `Model::forward`: {terminal(note)}.\n"
            )
        (staging / "REPORT.md").write_text(report)
        (staging / "RESULT.json").write_text(result)
        if out.exists():
            out.rmdir()
        os.replace(staging, out)
    except OSError as err:
        shutil.rmtree(staging, ignore_errors=True)
        raise Infrastructure(f"--out {quote(str(out))}: writing failed: {err}") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return sorted(p for p in out.rglob("*") if p.is_file())


def forward_region(conv: Conversion, program: Program, about: str) -> ForwardRegion | None:
    """The statements converted from the user's forward (the program lines `conv.lines` maps),
    its parameters and what it returns: the crate's `Model::forward`."""
    if conv.output is None:
        return None
    indices = tuple(st.index for st in program.statements() if st.line in conv.lines)
    return ForwardRegion(indices, tuple(conv.inputs), conv.output.name, about)


def mapping(conv: Conversion) -> str:
    """The program's module names and the user's, as a Markdown table."""
    rows = ["| in the program and the burn crate | in your module |", "|---|---|"]
    for prog, user in conv.modules.items():
        rows.append(f"| `{prog}` | {markdown_code(user)} |")
    return "\n".join(rows)


def markdown_code(text: str) -> str:
    """`text` as inline code in a Markdown table cell: control characters shown escaped, no
    backtick or pipe left to end the code span or the cell."""
    shown = terminal(text).replace("`", "'").replace("|", "\\|")
    return f"`{shown}`"
