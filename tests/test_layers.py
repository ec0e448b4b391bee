"""The data flow of the tree: cases -> runs -> results -> metrics -> verdicts ->
report / upgrade -> CLI. No module imports one above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

RUNNER = Path(__file__).resolve().parent.parent / "runner"

# Lower numbers are lower in the flow; a module may import its own layer and below.
LAYERS = {
    0: [
        "contract",
        "escape",
        "statusline",
        "errors",
        "paths",
        "versions",
        "inputs",
        "signals",
        "atomic",
        "limits",
        "outputs",
        "procinfo",
        "argtypes",
        "frameworks",
        "model",
        "fmt",
        "_probe",
        "program",
        "noise",
        "cost",
    ],
    1: ["cases"],
    2: ["workers", "execute", "worker", "adapters"],
    3: ["results"],
    4: ["metrics", "compare", "oracles"],
    5: ["verdicts"],
    6: ["engine", "progress"],
    7: ["report", "upgrade", "probe_overhead", "calibrate", "terminal", "pytest_plugin", "fuzz"],
    8: ["cli", "__main__"],
}
RANK = {name: rank for rank, names in LAYERS.items() for name in names}


def _top(module: Path) -> str:
    parts = module.relative_to(RUNNER).with_suffix("").parts
    return parts[0]


def _imports(path: Path) -> set[str]:
    """The runner modules (their top-level names under runner/) that `path` imports."""
    tree = ast.parse(path.read_text())
    package = path.relative_to(RUNNER).parent.parts
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module and node.module.startswith("runner."):
                    found.add(node.module.split(".")[1])
                elif node.module == "runner":
                    found.update(alias.name for alias in node.names)
                continue
            base = list(package[: len(package) - (node.level - 1)]) if node.level > 1 else list(package)
            target = base + (node.module.split(".") if node.module else [])
            if target:
                found.add(target[0])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("runner."))
    return found


MODULES = sorted(p for p in RUNNER.rglob("*.py"))


def test_every_module_has_a_layer():
    missing = sorted({_top(p) for p in MODULES} - set(RANK) - {"__init__"})
    assert not missing, f"add these to LAYERS: {missing}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(RUNNER)))
def test_no_module_imports_one_above_it(path: Path):
    own = _top(path)
    if own == "__init__":
        return
    above = {name: RANK[name] for name in _imports(path) if name in RANK and RANK[name] > RANK[own]}
    assert not above, f"{path.relative_to(RUNNER)} (layer {RANK[own]}) imports {above}"
