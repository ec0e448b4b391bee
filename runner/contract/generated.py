"""The files generated from the contract, and whether they are current.

- `rust_probe/src/contract.rs`: the probe's side of the table (`runner.contract.rust`);
- the operation tables of `docs/program-ir.md` and `cases/README.md`, between
  `<!-- generated: NAME -->` and `<!-- end generated: NAME -->` markers.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import ops, rust

ROOT = Path(__file__).resolve().parents[2]
RUST_FILE = ROOT / "rust_probe" / "src" / "contract.rs"

_SECTIONS: dict[str, Callable[[], str]] = {
    "operations": lambda: ops.markdown_table(),
    "attributes": lambda: ops.attrs_table(),
    "modules": lambda: ops.modules_table(),
}
_DOCS: dict[Path, tuple[str, ...]] = {
    ROOT / "docs" / "program-ir.md": ("operations", "attributes", "modules"),
    ROOT / "cases" / "README.md": ("operations", "attributes", "modules"),
}


def _with_sections(path: Path, text: str, names: tuple[str, ...]) -> str:
    for name in names:
        pattern = re.compile(
            rf"(<!-- generated: {name} [^\n]*-->\n)(.*?)(<!-- end generated: {name} -->)",
            re.DOTALL,
        )
        if pattern.search(text) is None:
            raise ValueError(
                f"{path}: no `<!-- generated: {name} ... -->` ... `<!-- end generated: {name} -->` markers"
            )
        match = pattern.search(text)
        assert match is not None
        body = _SECTIONS[name]()
        text = text[: match.start()] + match.group(1) + "\n" + body + "\n" + match.group(3) + text[match.end() :]
    return text


def expected() -> dict[Path, str]:
    """Every generated file with the text it should have."""
    files = {RUST_FILE: rust.render()}
    for path, names in _DOCS.items():
        files[path] = _with_sections(path, path.read_text(encoding="utf-8"), names)
    return files


def check() -> list[Path]:
    """The generated files that are not what `write` would write."""
    stale = []
    for path, text in expected().items():
        try:
            current = path.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != text:
            stale.append(path)
    return stale


def write() -> list[Path]:
    """Write the generated files that changed (each to a temporary file, then renamed); return them."""
    written = []
    for path in check():
        text = expected()[path]
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written.append(path)
    return written
