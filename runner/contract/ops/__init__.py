"""The one table of program operations and module kinds, by family.

Every part of the program machinery reads it: the parser (which names exist, their
arity, argument kinds and attributes), the IR validation, both interpreters, both code
renderers, the fuzz generator (categories, gradients, input domains, which frameworks
support an op), the documentation tables (`python3 -m runner.contract`), and the probe,
whose side (`rust_probe/src/contract.rs`) is generated from it.

A family module (`core`, `layers`, `tensors`, `losses`, `training`) lists its operations
(`SPECS`) and module kinds (`MODULES`); a new operation is added to one of them, plus
its two implementations (`runner/program/torch_ops/`, `rust_probe/src/program/families/`
for a plain function of its arguments) and its two renderings.
"""

from __future__ import annotations

import json
from typing import Final

from . import core, layers, losses, tensors, training
from .spec import (
    ARG_NAME,
    FRAMEWORKS,
    OMITTED,
    REQUIRED,
    ArgKind,
    AttrSpec,
    AttrType,
    AttrValue,
    Category,
    Default,
    Domain,
    Family,
    Framework,
    ModuleSpec,
    OpSpec,
    ParamSpec,
    Result,
    TensorDtype,
    _Marker,
)

__all__ = [
    "ARG_NAME",
    "BLOCK_OPS",
    "DECLARATIONS",
    "DTYPES",
    "DTYPE_INITS",
    "FRAMEWORKS",
    "INITS",
    "MODULES",
    "MODULE_SOURCES",
    "OMITTED",
    "OPS",
    "REQUIRED",
    "RESERVED_NAMES",
    "ArgKind",
    "AttrSpec",
    "AttrType",
    "AttrValue",
    "Category",
    "Default",
    "Domain",
    "Family",
    "Framework",
    "ModuleSpec",
    "OpSpec",
    "ParamSpec",
    "Result",
    "TensorDtype",
    "attrs_table",
    "markdown_table",
    "modules_table",
    "omitted_defaults",
    "supported_ops",
    "torch_keywords",
    "unsupported",
]

_FAMILIES = (core, layers, tensors, losses, training)

OPS: Final[dict[str, OpSpec]] = {spec.name: spec for family in _FAMILIES for spec in family.SPECS}
"""Every operation by name, in table order."""

MODULES: Final[dict[str, ModuleSpec]] = {spec.kind: spec for family in _FAMILIES for spec in family.MODULES}
"""Every module kind by its IR `kind`, in table order."""

MODULE_SOURCES: Final[dict[str, ModuleSpec]] = {spec.source: spec for spec in MODULES.values()}
"""Every module kind by its declaration call (`Conv2d`)."""

BLOCK_OPS: Final[frozenset[str]] = frozenset(n for n, s in OPS.items() if s.result == "block")
DECLARATIONS: Final[tuple[str, ...]] = ("param", "input", *MODULE_SOURCES)
"""The source's declaration calls (not operations)."""
INITS: Final[tuple[str, ...]] = ("normal", "uniform", "positive", "ones", "zeros", "arange")
"""The `init=` choices of a float `param(...)` / `input(...)`."""
DTYPES: Final[tuple[str, ...]] = ("float", "int", "bool")
"""The `dtype=` choices of `input(...)`: float (the default), int (indices), bool (masks)."""
DTYPE_INITS: Final[dict[str, tuple[str, ...]]] = {
    "int": ("randint", "zeros", "arange"),
    "bool": ("bernoulli", "triu", "ones", "zeros"),
}
"""The `init=` choices of an int or bool `input(...)` (`randint` takes `high=`; `triu`: a causal mask)."""
RESERVED_NAMES: Final[frozenset[str]] = frozenset(OPS) | frozenset(DECLARATIONS) | {"range", "torch"}
"""Names a program cannot bind (besides Python keywords and names starting with `_`)."""


def unsupported(framework: Framework, op: str, attrs: dict[str, AttrValue]) -> tuple[str, str] | None:
    """What `framework` cannot run in this statement and why: (`no_grad`, reason) for an
    operation it lacks, (`backward(retain_graph=True)`, reason) for an attribute's value; or None."""
    spec = OPS[op]
    if not spec.supports(framework):
        return op, spec.unsupported_reason
    if framework == "burn":
        for a in spec.attrs:
            if a.burn_unsupported is not None and a.name in attrs and attrs[a.name] in a.burn_unsupported[0]:
                return f"{op}({a.name}={attrs[a.name]!r})", a.burn_unsupported[1]
    return None


def torch_keywords(op: str, attrs: dict[str, AttrValue]) -> dict[str, AttrValue]:
    """The attributes a statement gives, by torch's keyword for its `torch_call` (an omitted one
    stays out, so torch applies its own default; one only burn sees is left out)."""
    spec = OPS[op]
    return {a.torch_name or a.name: attrs[a.name] for a in spec.attrs if a.name in attrs and "torch" in a.sides}


def supported_ops(framework: Framework) -> tuple[str, ...]:
    return tuple(name for name, spec in OPS.items() if spec.supports(framework))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_table(*, detailed: bool = False) -> str:
    """The operations as a Markdown table: the contract's columns (op, source, torch, burn), one row per
    contract row; `detailed=True` adds the IR attributes, gradient and input domain of each op."""
    header = ["op", "source", "torch", "burn 0.22.1"]
    if detailed:
        header += ["attrs", "gradient", "domain"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    rows: dict[str, list[OpSpec]] = {}
    for spec in OPS.values():
        rows.setdefault(spec.row or spec.name, []).append(spec)
    for specs in rows.values():
        first = specs[0]
        cells = [" ".join(f"`{s.name}`" for s in specs), first.source, first.torch, first.burn]
        if detailed:
            attrs = "; ".join(
                f"`{s.name}`: " + ", ".join(f"`{a.name}` ({a.type})" for a in s.attrs) for s in specs if s.attrs
            )
            grads = ", ".join(sorted({"yes" if s.differentiable else "no" for s in specs}))
            domains = "; ".join(
                f"`{s.name}`: " + ", ".join(s.domain) for s in specs if any(d != "any" for d in s.domain)
            )
            cells += [attrs, grads, domains]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


_TYPE_NAMES: Final[dict[AttrType, str]] = {
    "float": "number",
    "int": "integer",
    "bool": "boolean",
    "str": "string",
    "int_list": "integer list",
}


def _default_text(a: AttrSpec, value: AttrValue) -> str:
    """A documented default as the tables write it: a string default of a number names the
    attribute whose value it is (a pool's stride: `kernel_size`)."""
    if isinstance(value, str) and a.type != "str":
        return f"`{value}`'s value"
    return f"`{json.dumps(value)}`"


def omitted_defaults(a: AttrSpec) -> str:
    """What an omitted attribute is on each side, as the tables say it: both documented defaults
    (None: no value), marked where they differ."""
    torch_d, burn_d = a.torch_default, a.burn_default
    if a.burn_writes_torch_default and torch_d is not None:
        return f"omitted: torch {_default_text(a, torch_d)}; burn has no default, a port writes torch's"
    if torch_d is None and burn_d is None:
        return "omitted: none on both"
    if torch_d is not None and burn_d is not None and torch_d == burn_d and type(torch_d) is type(burn_d):
        return f"omitted: {_default_text(a, torch_d)} on both"
    torch_text = f"torch {_default_text(a, torch_d)}" if torch_d is not None else "torch: none"
    if burn_d is not None:
        burn_text = f"burn {_default_text(a, burn_d)}"
    elif a.burn_unsupported is not None:
        return f"omitted: {torch_text}, burn: no such setting"
    else:
        burn_text = "burn: none"
    return f"omitted: {torch_text}, {burn_text} (**they differ**)"


def _attr_row(owner: str, a: AttrSpec) -> str:
    if a.default is REQUIRED:
        default = "required"
    elif a.default is OMITTED:
        default = omitted_defaults(a)
    elif a.default is ARG_NAME:
        default = "the tensor's name"
    else:
        default = f"`{json.dumps(a.default)}`"
    meaning = a.doc
    constraint = a.describe_range()
    if a.choices:
        constraint = "one of " + ", ".join(a.choices)
    if constraint:
        meaning = f"{meaning} ({constraint})" if meaning else constraint
    kind = _TYPE_NAMES[a.type]
    if a.positional:
        kind += ", positional"
    return f"| {owner} | `{a.name}` | {kind} | {default} | {_cell(meaning)} |"


def attrs_table() -> str:
    """The IR `attrs` of every op that has any, then of every module declaration
    (`Conv2d(...)`), as a Markdown table."""
    lines = ["| op | attr | type | default | meaning |", "|---|---|---|---|---|"]
    for spec in OPS.values():
        lines += [_attr_row(f"`{spec.name}`", a) for a in spec.attrs]
    for module in MODULES.values():
        lines += [_attr_row(f"`{module.source}(...)`", a) for a in module.attrs]
    return "\n".join(lines) + "\n"


def modules_table() -> str:
    """The module kinds a program declares, with their attributes, as a Markdown table."""
    lines = ["| declaration | torch | burn 0.22.1 | attrs | params (torch layout) |", "|---|---|---|---|---|"]
    for spec in MODULES.values():
        attrs = ", ".join(
            f"`{a.name}`" + (f"={json.dumps(a.default)}" if not isinstance(a.default, _Marker) else "")
            for a in spec.attrs
        )
        params = ", ".join(
            f"`{p.name}` {p.shape_doc}"
            + (" (buffer)" if p.role == "buffer" else "")
            + (f" if `{p.when}`" if p.when else "")
            for p in spec.params
        )
        lines.append(f"| `{spec.source}(...)` | {_cell(spec.torch)} | {_cell(spec.burn)} | {attrs} | {params} |")
    return "\n".join(lines) + "\n"
