"""One statement alone, on the inputs a run recorded: the programs that judge a statement by
itself, as ∇Fuzz tests one API at a time.

- `op_replay`: the operation on params holding the recorded arguments (a module with its
  recorded params), its result observed; for the gradient, `sum(out * up)` with the same
  upstream gradient `up` (an input) on both sides, one backward, and the arguments' gradients
  observed: a vector–Jacobian product.
- `step_replay`: the optimizer, as the program built it, stepping params that hold the recorded
  values with the recorded gradients (`sum(p * g)` has gradient `g`), three times.
- `flag_replay`: a graph operation (`detach`, `require_grad`, ...) on an argument of the kind
  the program gave it (a param, a tensor computed from one, a constant), its result's flags.

Every replay is a `ParsedProgram` whose source is a case file's program as it is.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..contract.ops import OPS, AttrValue
from ..program.ir import ParsedProgram, Stmt, walk
from .instrument import Site, renumber

Obs = dict[str, Any]
STEPS = 10  # optimizer steps of a step replay: a rule's effect accumulates past the tolerance


@dataclass(frozen=True)
class Arg:
    """An argument as recorded: torch shape ([] for a scalar), element type, values, flags."""

    shape: tuple[int, ...]
    dtype: str
    values: list[float]
    leaf_param: bool = False
    tracked: bool = False


def arg_of(obs: Obs, dtype: str = "float") -> Arg | None:
    """The argument a run's observation recorded (torch's: its flags say leaf or not)."""
    values = obs.get("values")
    if values is None or not all(math.isfinite(v) for v in values):
        return None
    flags = obs.get("flags") or {}
    raw = flags.get("raw") or {}
    return Arg(
        tuple(obs.get("shape") or ()),
        dtype,
        [float(v) for v in values],
        leaf_param=bool(raw.get("is_leaf", True)) and bool(flags.get("requires_grad")),
        tracked=bool(flags.get("tracked")),
    )


def upstream(n: int, salt: int = 0) -> list[float]:
    """The upstream gradient of a replay: fixed, nonzero, of both signs."""
    rng = random.Random(7919 * n + salt)
    return [round(rng.choice((-1.0, 1.0)) * rng.uniform(0.25, 1.0), 4) for _ in range(n)]


def _shape(shape: Sequence[int]) -> list[int]:
    return list(shape) if shape else [1]


def _decl(name: str, role: str, arg: Arg) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "role": role, "shape": _shape(arg.shape), "init": "values"}
    if arg.dtype != "float":
        spec["dtype"] = arg.dtype
        spec["role"] = "input"
    spec["values"] = list(arg.values)
    return spec


def _stmt(op: str, args: list[str], out: str | None = None, **attrs: AttrValue) -> dict[str, Any]:
    return {"op": op, "args": args, "out": out, "attrs": attrs}


def op_replay(
    site: Site,
    args: Sequence[Arg],
    module: dict[str, Any] | None,
    module_values: dict[str, list[float]],
    *,
    attrs: dict[str, AttrValue] | None = None,
    gradient: bool = True,
    out_shape: Sequence[int] | None = None,
) -> ParsedProgram:
    """`site`'s operation alone on `args` (and the module declaration `module` holding
    `module_values`), with `attrs` in place of the statement's; with `gradient`, a backward of
    `sum(out * up)` and the arguments' gradients observed."""
    spec = OPS[site.op]
    tensors: list[dict[str, Any]] = []
    names: list[str] = []
    float_args: list[str] = []
    arg_iter = iter(args)
    modules: list[dict[str, Any]] = []
    for kind in site.inputs:
        if kind is None:
            assert module is not None
            modules.append(module)
            names.append(module["name"])
            continue
        arg = next(arg_iter)
        name = f"a{len(tensors)}"
        role = "param" if gradient and spec.differentiable and arg.dtype == "float" else "input"
        tensors.append(_decl(name, role, arg))
        names.append(name)
        if role == "param":
            float_args.append(name)
    body = [_stmt(site.op, names, "out", **(site.stmt.attrs if attrs is None else attrs))]
    body.append({**_stmt("observe", ["out"]), "attrs": {"label": "out", "values": True}})
    if gradient and out_shape is not None:
        n = math.prod(out_shape) if out_shape else 1
        tensors.append(
            {"name": "up", "role": "input", "shape": _shape(out_shape), "init": "values", "values": upstream(n)}
        )
        body += [_stmt("mul", ["out", "up"], "w"), _stmt("sum", ["w"], "loss"), _stmt("backward", ["loss"])]
        for name in float_args:
            body.append({**_stmt("observe", [name]), "attrs": {"label": name, "values": True}})
        for p in module_values:
            body.append(
                {**_stmt("observe", [f"{module['name']}.{p}" if module else p]), "attrs": {"label": p, "values": True}}
            )
    parsed = _parsed(tensors, modules, module_values)
    return renumber(parsed, body)


def _parsed(
    tensors: list[dict[str, Any]], modules: list[dict[str, Any]], values: dict[str, list[float]]
) -> ParsedProgram:
    from ..program.ir import ModuleDecl

    specs = [dict(t) for t in tensors]
    decls = []
    for m in modules:
        decl = ModuleDecl.model_validate(m)
        decls.append(decl)
        specs += [
            {**s.model_dump(), "role": "param" if s.role == "param" else s.role} for s in decl.tensor_specs(values)
        ]
    return ParsedProgram.model_validate({"tensors": specs, "modules": [d.model_dump() for d in decls], "body": []})


def optimizer_of(program: ParsedProgram, site: Site) -> Stmt | None:
    """The statement that built the optimizer a `step` steps."""
    name = site.stmt.args[0] if site.stmt.args else None
    found = None
    for st in walk(program.body):
        if st.out == name and OPS[st.op].result == "optimizer":
            found = st
        if st.index == site.index:
            break
    return found


def step_replay(
    optimizer: Stmt, params: dict[str, tuple[Arg, list[float] | None]], attrs: dict[str, AttrValue] | None = None
) -> ParsedProgram:
    """The optimizer stepping params that hold the recorded values with the recorded gradients
    (constant: `sum(p * g)`), `STEPS` times; the params observed."""
    tensors: list[dict[str, Any]] = []
    body: list[dict[str, Any]] = [_stmt(optimizer.op, [], "opt", **(optimizer.attrs if attrs is None else attrs))]
    inner: list[dict[str, Any]] = [_stmt("zero_grad", ["opt"])]
    terms: list[str] = []
    names: list[str] = []
    for i, (arg, grad) in enumerate(params.values()):
        p = f"p{i}"
        names.append(p)
        tensors.append({"name": p, "role": "param", "shape": _shape(arg.shape), "init": "values", "values": arg.values})
        if grad is None:
            continue
        g = f"g{i}"
        tensors.append({"name": g, "role": "input", "shape": _shape(arg.shape), "init": "values", "values": grad})
        inner += [_stmt("mul", [p, g], f"w{i}"), _stmt("sum", [f"w{i}"], f"s{i}")]
        terms.append(f"s{i}")
    if not terms:
        raise ValueError("no param has a gradient")
    total = terms[0]
    for j, term in enumerate(terms[1:]):
        inner.append(_stmt("add", [total, term], f"t{j}"))
        total = f"t{j}"
    inner += [_stmt("backward", [total]), _stmt("step", ["opt"])]
    body.append({**_stmt("repeat", []), "attrs": {"count": STEPS, "var": "i"}, "body": inner})
    for p in names:
        body.append({**_stmt("observe", [p]), "attrs": {"label": p, "values": True}})
    return renumber(ParsedProgram.model_validate({"tensors": tensors, "modules": [], "body": []}), body)


def flag_replay(site: Site, arg: Arg) -> ParsedProgram:
    """A graph operation on an argument of the kind the program gave it: a param (a leaf that
    requires grad), a tensor computed from one, or a constant."""
    tensors: list[dict[str, Any]] = []
    body: list[dict[str, Any]] = []
    if arg.leaf_param:
        tensors.append(
            {"name": "a0", "role": "param", "shape": _shape(arg.shape), "init": "values", "values": arg.values}
        )
    elif arg.tracked:
        tensors.append(
            {"name": "src", "role": "param", "shape": _shape(arg.shape), "init": "values", "values": arg.values}
        )
        body.append(_stmt("mul_scalar", ["src"], "a0", scalar=1.0))
    else:
        tensors.append(
            {"name": "a0", "role": "input", "shape": _shape(arg.shape), "init": "values", "values": arg.values}
        )
    spec = OPS[site.op]
    if spec.result == "tensor":
        body.append(_stmt(site.op, ["a0"], "out", **site.stmt.attrs))
        body.append({**_stmt("observe", ["out"]), "attrs": {"label": "out", "values": True}})
    else:
        if site.op == "freeze" and not arg.leaf_param:
            raise ValueError("freeze takes a param")
        body.append(_stmt(site.op, ["a0"], None, **site.stmt.attrs))
        body.append({**_stmt("observe", ["a0"]), "attrs": {"label": "out", "values": True}})
    return renumber(ParsedProgram.model_validate({"tensors": tensors, "modules": [], "body": []}), body)


def kind_of(arg: Arg) -> str:
    """The attribute class of a graph operation's argument."""
    return "param" if arg.leaf_param else ("computed" if arg.tracked else "constant")
