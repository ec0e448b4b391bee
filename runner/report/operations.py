"""The operation table as the report shows it: every operation of the language by family,
whether burn 0.22.1 has it, and the cases whose programs use it (read from the sources the
results carry: a report made from results files alone can show it)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..contract.ops import MODULES as MODULE_KINDS
from ..contract.ops import OPS, ModuleSpec
from ..errors import BadInput
from ..model.results import CaseInfo
from ..program import syntax
from ..program.ir import Stmt

FAMILY_OF_CATEGORY = {
    "layer": "layers",
    "tensor": "tensors",
    "loss": "losses",
    "training": "training",
    "optimizer": "training",
}


@dataclass(frozen=True)
class OperationRow:
    name: str
    family: str
    summary: str
    burn: bool
    cases: tuple[str, ...]


@functools.lru_cache(maxsize=512)
def _ops_in(source: str) -> frozenset[str]:
    """The operations a program source uses (nothing if it no longer parses)."""
    try:
        parsed = syntax.parse(source, where="results: program source")
    except (BadInput, ValueError, RecursionError):
        return frozenset()
    return frozenset(st.op for st in _walk(parsed.body))


def _walk(body: list[Stmt]) -> list[Stmt]:
    out = []
    for st in body:
        out.append(st)
        out += _walk(st.body or [])
    return out


def rows(infos: list[CaseInfo]) -> list[OperationRow]:
    """Every operation in table order, with the cases (by name) whose programs use it."""
    used: dict[str, list[str]] = {name: [] for name in OPS}
    for info in infos:
        ops = frozenset().union(*(_ops_in(p.source) for p in info.programs.values()))
        for op in sorted(ops):
            if op in used:
                used[op].append(info.name)
    return [
        OperationRow(
            name,
            FAMILY_OF_CATEGORY.get(spec.category, "core"),
            spec.summary,
            spec.supports("burn"),
            tuple(sorted(set(used[name]))),
        )
        for name, spec in OPS.items()
    ]


def module_kinds() -> list[ModuleSpec]:
    return list(MODULE_KINDS.values())


def summary(table: list[OperationRow]) -> str:
    """`97 operations, 61 used by the cases here; burn lacks 3`."""
    used = sum(bool(r.cases) for r in table)
    lacking = sum(not r.burn for r in table)
    return f"{len(table)} operations ({len(MODULE_KINDS)} module kinds), {used} used by the cases here; burn lacks {lacking}"
