"""The data flow of the tree: case file -> runs -> results -> metrics/oracles
-> verdicts -> report / upgrade / fuzz -> CLI. No module imports one above it
(imports under TYPE_CHECKING count), the products do not import each other,
and no two sibling modules or packages import each other, directly or in a
ring. The contracts are in pyproject.toml ([tool.importlinter]); import-linter
checks them."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="import-linter is a test extra: pip install -e .[test]")

ROOT = Path(__file__).resolve().parent.parent
LINT = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))"


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the `runner` package found in `root`, with `root`'s pyproject.toml."""
    return subprocess.run(
        [sys.executable, "-c", LINT],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return found


def test_the_contracts_hold():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(contracts())} kept, 0 broken." in result.stdout


def test_the_contracts_say_what_the_layers_are():
    by_type = {c["type"]: c for c in contracts()}
    assert set(by_type) >= {"layers", "acyclic_siblings", "forbidden"}
    top = next(c for c in contracts() if c.get("containers") == ["runner"])
    layers = top["layers"]
    assert isinstance(layers, list)
    # the CLI on top; `port` (which uses the fuzzer's localizer) below it; the products
    # independent of each other, side by side below those
    assert layers[1] == "cli"
    assert layers[2] == "port"
    products = {name.strip() for name in layers[3].split("|")}
    assert {"report", "upgrade", "fuzz"} <= products
    assert top["exhaustive"] is True  # a new module must be given its layer


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package and its contracts, to break on purpose."""
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(ROOT / "runner", root / "runner", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def _broken(copy: Path, module: str, line: str) -> str:
    path = copy / "runner" / module
    original = path.read_text()
    try:
        path.write_text(original + "\n" + textwrap.dedent(line))
        result = lint(copy)
    finally:
        path.write_text(original)
    assert result.returncode != 0, f"{module}: `{line.strip()}` went unnoticed"
    return result.stdout


def test_an_import_from_a_product_into_another_is_caught(copy: Path):
    out = _broken(copy, "fuzz/command.py", "from ..upgrade import classify  # noqa\n")
    assert "runner.fuzz is not allowed to import runner.upgrade" in out


def test_an_upward_import_hidden_under_type_checking_is_caught(copy: Path):
    line = """
    from typing import TYPE_CHECKING
    if TYPE_CHECKING:
        from .engine import check  # noqa
    """
    out = _broken(copy, "results.py", line)
    assert "runner.results is not allowed to import runner.engine" in out


def test_a_cycle_inside_a_package_is_caught(copy: Path):
    out = _broken(copy, "report/machines.py", "from . import differences  # noqa\n")
    assert "No cycles are allowed in runner.report" in out or "not allowed to import" in out


def test_results_do_not_render_code(copy: Path):
    out = _broken(copy, "results.py", "from .program import rust  # noqa\n")
    assert "runner.results is not allowed to import runner.program.rust" in out
