"""A program rewritten to observe every statement: its tensor arguments just before it and its
result just after (`@K<I`: argument I of statement K; `@K`: its result, or the argument an
in-place statement rebinds), the params before and after each optimizer step and after each
backward (`@K<p`, `@K>p`), and a module's params before its call. Comparing the two frameworks'
runs of the rewritten program label by label says where values first differ: the first
statement whose inputs agree and whose result does not (`Site`).

Statements are numbered as in the program the fuzzer generated (pre-order `index`): a site's
`index` is the statement's there, so a case can name it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..contract.ops import OPS
from ..program.ir import ParsedProgram, Stmt, walk
from .rules import PURE_CATEGORIES

# Graph operations a replay can judge on its own: the result's values and flags from the argument's.
FLAG_OPS = frozenset({"detach", "clone", "require_grad", "freeze", "add_scalar_", "without_autodiff"})
OPTIMIZER_STEP = "step"


def pure(op: str) -> bool:
    """A plain function of its arguments (a module call included): replayable on recorded inputs."""
    spec = OPS[op]
    return spec.result == "tensor" and (spec.category in PURE_CATEGORIES or spec.module is not None)


@dataclass
class Site:
    """One statement of the generated program, as the rewritten program observes it."""

    index: int
    op: str
    stmt: Stmt
    inputs: list[str | None] = field(default_factory=list)  # per argument: its label (None: a module)
    output: str | None = None
    params_before: dict[str, str] = field(default_factory=dict)  # param -> label
    params_after: dict[str, str] = field(default_factory=dict)
    in_loop: bool = False

    @property
    def labels(self) -> list[str]:
        out = [x for x in self.inputs if x is not None]
        out += list(self.params_before.values())
        if self.output is not None:
            out.append(self.output)
        return out + list(self.params_after.values())


def _params(program: ParsedProgram) -> list[str]:
    return [t.name for t in program.tensors if t.role == "param"]


def _observe(name: str, label: str) -> dict[str, Any]:
    return {"op": "observe", "args": [name], "out": None, "attrs": {"label": label, "values": True}}


def instrument(program: ParsedProgram) -> tuple[ParsedProgram, list[Site]]:
    """The rewritten program and its sites (every statement but observations and blocks)."""
    params = _params(program)
    module_params = {m.name: list(m.tensor_shapes()) for m in program.modules}
    sites: list[Site] = []

    def rewrite(body: list[Stmt], in_loop: bool) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for st in body:
            spec = OPS[st.op]
            if st.op == "observe":
                out.append(_plain(st))
                continue
            if st.body is not None:
                block = _plain(st)
                block["body"] = rewrite(st.body, in_loop or st.op == "repeat")
                out.append(block)
                continue
            site = Site(st.index, st.op, st, in_loop=in_loop)
            sites.append(site)
            k = st.index
            observed_args = pure(st.op) or st.op in FLAG_OPS or st.op == "grad"
            if observed_args:
                for i, (arg, kind) in enumerate(zip(st.args, _kinds(st))):
                    if kind == "module":
                        site.inputs.append(None)
                        for p in module_params.get(arg, []):
                            label = f"@{k}<{p}"
                            site.params_before[p] = label
                            out.append(_observe(p, label))
                    else:
                        label = f"@{k}<{i}"
                        site.inputs.append(label)
                        out.append(_observe(arg, label))
            if st.op == OPTIMIZER_STEP:
                for p in params:
                    label = f"@{k}<{p}"
                    site.params_before[p] = label
                    out.append(_observe(p, label))
            out.append(_plain(st))
            if st.out is not None and spec.result == "tensor":
                site.output = f"@{k}"
                out.append(_observe(st.out, site.output))
            elif spec.inplace and st.args:
                site.output = f"@{k}"
                out.append(_observe(st.args[0], site.output))
            if st.op in (OPTIMIZER_STEP, "backward"):
                for p in params:
                    label = f"@{k}>{p}"
                    site.params_after[p] = label
                    out.append(_observe(p, label))
        return out

    body = rewrite(list(program.body), False)
    return renumber(program, body), sites


def _kinds(st: Stmt) -> list[str]:
    spec = OPS[st.op]
    extra = len(st.args) - len(spec.args)
    kinds: list[str] = list(spec.args)
    return kinds + ([spec.args[-1]] * extra if extra > 0 else [])


def _plain(st: Stmt) -> dict[str, Any]:
    return {"op": st.op, "args": list(st.args), "out": st.out, "attrs": dict(st.attrs)}


def renumber(program: ParsedProgram, body: list[dict[str, Any]]) -> ParsedProgram:
    """`program`'s declarations with `body` (statement dicts), indices and lines in pre-order."""
    counter = iter(range(10**7))

    def number(stmt: dict[str, Any]) -> dict[str, Any]:
        index = next(counter)
        data = {**stmt, "index": index, "line": index}
        if stmt.get("body") is not None:
            data["body"] = [number(child) for child in stmt["body"]]
        return data

    return ParsedProgram.model_validate(
        {
            "tensors": [t.model_dump() for t in program.tensors],
            "modules": [m.model_dump() for m in program.modules],
            "body": [number(s) for s in body],
        }
    )


def original_index(instrumented: ParsedProgram, sites: list[Site]) -> dict[int, int]:
    """Statement index in the rewritten program -> the statement's index in the generated one."""
    by_key: dict[int, int] = {}
    remaining = iter(sites)
    current = next(remaining, None)
    for st in walk(instrumented.body):
        if st.op == "observe" or st.body is not None:
            continue
        if current is not None and st.op == current.op:
            by_key[st.index] = current.index
            current = next(remaining, None)
    return by_key
