"""Each framework's own default of every attribute a program may omit, read from the framework.

The table (`runner/contract/ops/`) documents, for each `OMITTED` attribute of every operation and
module kind, torch's default (`torch_default`) and burn's (`burn_default`): the documentation
tables show them, and a burn default that differs from torch's is a difference a port meets
without writing anything. Here each documented value is held against its framework:

- torch's against the signature of the callable the port calls (`inspect.signature`; the
  documented signature line of a builtin such as `torch.nn.functional.gelu` or of a dispatch
  wrapper such as `max_pool2d`, then the ATen schemas for a keyword that line leaves out, such
  as `torch.var`'s `unbiased`): the op's `torch_call` or `torch_signature`, a module kind's
  `torch_class`;
- burn's against `_probe.burn_defaults()`, which reads burn 0.22.1's `Config::new()` defaults in
  the probe (`rust_probe/src/program/defaults.rs`).

The tests are generic over the table: an attribute any family adds is checked when it lands.
An attribute with no framework source says why in `NO_TORCH_SOURCE` / `NO_BURN_SOURCE`.

A documented default of None is "no value" (torch's `None`: no clamp bound, no padding row); a
string default of a number names the attribute whose value it is (a pool's stride: torch's
`stride=None` documented as `Default: kernel_size`, burn's `#[config(default = "kernel_size")]`).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import re
from collections.abc import Iterator
from typing import Any

import pytest

from runner import _probe
from runner.contract.ops import MODULES, OMITTED, OPS, AttrSpec, AttrValue

_CLIP = "absent means no clipping on either side: torch calls no clip function, burn's config keeps `None`"

NO_TORCH_SOURCE: dict[str, str] = {
    **{f"{op}.clip_grad_norm": _CLIP for op in ("sgd", "adam", "adamw", "rmsprop")},
    **{f"{op}.clip_grad_value": _CLIP for op in ("sgd", "adam", "adamw", "rmsprop")},
}
"""Omittable attributes that are not an argument of torch's callable, and why."""

_NO_AFFINE = (
    "`BatchNormConfig` has no such setting: gamma and beta always exist (ones and zeros, trained), "
    "which is torch's affine=True; the port omits a given `affine`"
)
_CLAMP = (
    "burn's `clamp(min, max)` takes both bounds, with no default: for an omitted bound the port calls "
    "`clamp_min` / `clamp_max`, no bound, as torch's None"
)

NO_BURN_SOURCE: dict[str, str] = {
    "gelu.approximate": "burn has two functions (`gelu`, `gelu_approximate`) and no setting: "
    "the port calls `gelu` (exact) for an omitted approximate",
    "linear_lr.start_factor": "`LinearLrSchedulerConfig::new` takes every value (no default): "
    "the port writes torch's (`burn_writes_torch_default`)",
    "linear_lr.end_factor": "as start_factor",
    "linear_lr.total_iters": "as start_factor",
    "BatchNorm1d.affine": _NO_AFFINE,
    "BatchNorm2d.affine": _NO_AFFINE,
    "Embedding.padding_idx": "`EmbeddingConfig` has no padding index: no row is kept at zero, as torch's "
    "None; the port omits a given `padding_idx`",
    "Dropout.p": "`DropoutConfig::new` takes the probability (no default): the port writes torch's "
    "(`burn_writes_torch_default`)",
    "MultiheadAttention.batch_first": "burn's `MultiHeadAttention` has no such setting (always batch "
    "first): the port follows torch's layout, swapping dims 0 and 1 for torch's default "
    "(`burn_writes_torch_default`)",
    "clamp.min": _CLAMP,
    "clamp.max": _CLAMP,
    "var.unbiased": "burn's `var(dim)` takes no such argument: it divides by n - 1 (`var_bias` by n), "
    "so a port of torch's `var(t, dim)` calls `var`",
    "var.correction": "as unbiased",
}
"""Omittable attributes burn's configs hold no default for (besides those with `burn_unsupported`
values, whose burn side is refused), and why."""

TUPLE_ELEMENTS: dict[str, tuple[str, int]] = {"beta1": ("betas", 0), "beta2": ("betas", 1)}
"""Attributes that are one element of a torch argument (Adam's `betas`)."""


def _omittable() -> Iterator[tuple[str, AttrSpec, str | None, tuple[str, ...]]]:
    """(`owner.attr`, its spec, the torch callable the port calls, the owner's attribute names) of
    every omittable attribute."""
    for op in OPS.values():
        for a in op.attrs:
            if a.default is OMITTED:
                yield f"{op.name}.{a.name}", a, op.torch_call or op.torch_signature, op.attr_names
    for m in MODULES.values():
        for a in m.attrs:
            if a.default is OMITTED:
                yield f"{m.source}.{a.name}", a, m.torch_class, m.attr_names


OMITTABLE = {key: (a, source) for key, a, source, _ in _omittable()}
SIBLINGS = {key: names for key, _, _, names in _omittable()}
BURN_DEFAULTS: dict[str, Any] = _probe.burn_defaults()


def _same(documented: AttrValue, read: Any) -> bool:
    """The documented default equals the one read: booleans and strings exactly, numbers to float32
    (burn keeps most hyperparameters as f32: 1e-5 reads back as 9.99999974e-06)."""
    if isinstance(documented, bool) or isinstance(read, bool):
        return type(documented) is type(read) and documented == read
    if isinstance(documented, (int, float)) and isinstance(read, (int, float)):
        return math.isclose(float(documented), float(read), rel_tol=1e-6, abs_tol=1e-12)
    return bool(documented == read)


def _reference(a: AttrSpec, documented: AttrValue | None, key: str) -> str | None:
    """The attribute a documented default names (a pool's stride: `kernel_size`), or None."""
    if isinstance(documented, str) and a.type != "str" and documented in SIBLINGS[key]:
        return documented
    return None


def _callable(path: str) -> Any:
    module_name, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module_name), name)


_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _aten_defaults(name: str) -> dict[str, Any]:
    """Each keyword's default in the schemas of ATen's operator `name`, where every overload that
    gives the keyword a default gives the same one."""
    import torch

    try:
        packet = getattr(torch.ops.aten, name)
    except (AttributeError, RuntimeError):
        return {}
    found: dict[str, list[Any]] = {}
    for overload in packet.overloads():
        for arg in getattr(packet, overload)._schema.arguments:
            if arg.has_default_value():
                found.setdefault(arg.name, []).append(arg.default_value)
    return {k: vs[0] for k, vs in found.items() if all(v == vs[0] for v in vs)}


def torch_signature_defaults(path: str) -> dict[str, Any]:
    """Each keyword's default in torch's signature of `path`; for a builtin without one, or a
    dispatch wrapper whose signature is `(*args, **kwargs)` (`max_pool2d`), the signature line
    its docstring documents (`gelu(input, approximate = 'none') -> Tensor`), with the keywords
    that line leaves out from ATen's schemas of the operator (`torch.var`'s `unbiased`)."""
    target = _callable(path)
    try:
        params = inspect.signature(target).parameters
        if not all(p.kind in _VARIADIC for p in params.values()):
            return {n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty}
    except ValueError:
        pass
    doc = (target.__doc__ or "").strip().splitlines()
    line = doc[0] if doc else ""
    head = line.split("->")[0].strip()
    name = path.rpartition(".")[2]
    if not head.startswith(name + "("):
        raise AssertionError(f"{path}: no signature and no documented signature line (got {line!r})")
    tree = ast.parse(f"def {head}: pass")
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    args = fn.args.args
    defaults = fn.args.defaults
    named = args[len(args) - len(defaults) :]
    out = {a.arg: ast.literal_eval(d) for a, d in zip(named, defaults)}
    out |= {a.arg: ast.literal_eval(d) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None}
    return {**_aten_defaults(name), **out}


def torch_keyword_doc(path: str, keyword: str) -> str:
    """The entry of `keyword` in the argument list of `path`'s docstring (its lines, joined); empty
    when the docstring has none."""
    lines = (inspect.getdoc(_callable(path)) or "").splitlines()
    for i, line in enumerate(lines):
        if re.match(rf"\s*{re.escape(keyword)}( \([^)]*\))?:", line):
            indent = len(line) - len(line.lstrip())
            entry = [line.strip()]
            for more in lines[i + 1 :]:
                if more.strip() and len(more) - len(more.lstrip()) <= indent:
                    break
                entry.append(more.strip())
            return " ".join(entry)
    return ""


def _named_default(entry: str) -> str | None:
    """The attribute a keyword's documentation names as its default (`Default: :attr:`kernel_size``)."""
    said = re.search(r"Default(?::| value is)\s+:attr:`(\w+)`", entry)
    return said.group(1) if said else None


@pytest.mark.parametrize("key", sorted(OMITTABLE))
def test_the_documented_torch_default_is_torchs_own(key: str) -> None:
    a, source = OMITTABLE[key]
    if "torch" not in a.sides:
        assert a.torch_default is None, f"{key}: torch never sees it, so it has no torch default"
        return
    if key in NO_TORCH_SOURCE:
        assert a.torch_default is None, f"{key}: documented {a.torch_default!r} but has no torch source"
        return
    assert source is not None, f"{key}: the op names no torch callable (torch_call / torch_signature / torch_class)"
    defaults = torch_signature_defaults(source)
    name, index = TUPLE_ELEMENTS.get(a.name, (a.torch_name or a.name, None))
    assert name in defaults, f"{key}: {source} has no keyword {name!r} with a default (it has {sorted(defaults)})"
    read = defaults[name] if index is None else defaults[name][index]
    if read is None:
        # None in the signature: no value, unless the keyword's documentation names the attribute
        # whose value it takes (`Default: :attr:`kernel_size``).
        named = _named_default(torch_keyword_doc(source, name))
        documented = _reference(a, a.torch_default, key) if a.torch_default is not None else None
        assert (a.torch_default is None or documented is not None) and documented == named, (
            f"{key}: {source}'s default is None, which its documentation says is "
            f"{f'the value of {named!r}' if named else 'no value'}; the table says {a.torch_default!r}"
        )
        return
    assert a.torch_default is not None, f"{key}: document torch's default {read!r} (`torch_default`) in the table"
    assert _same(a.torch_default, read), f"{key}: documented torch default {a.torch_default!r}, {source} has {read!r}"


@pytest.mark.parametrize("key", sorted(OMITTABLE))
def test_the_documented_burn_default_is_burns_own(key: str) -> None:
    a, _ = OMITTABLE[key]
    if "burn" not in a.sides:
        assert a.burn_default is None, f"{key}: burn never sees it, so it has no burn default"
        return
    if a.burn_writes_torch_default:
        assert key in NO_BURN_SOURCE, f"{key}: the port writes torch's default, so say in NO_BURN_SOURCE why"
    if key in NO_BURN_SOURCE:
        assert key not in BURN_DEFAULTS, f"{key}: listed without a burn source, but the probe reads one"
        assert a.burn_default is not None or a.burn_writes_torch_default or a.torch_default is None, (
            f"{key}: document what burn does when it is omitted (`burn_default`; None only where "
            "torch's is None too: no value on either side)"
        )
        return
    if a.burn_default is None and a.burn_unsupported is not None and key not in BURN_DEFAULTS:
        return  # burn's side of the attribute is refused for the values it lacks
    assert key in BURN_DEFAULTS, (
        f"{key}: no burn default read by the probe; add it to burn_defaults() in "
        "rust_probe/src/program/defaults.rs, or say why in NO_BURN_SOURCE"
    )
    read = BURN_DEFAULTS[key]
    if read is None:
        assert a.burn_default is None, f"{key}: burn's config holds no default, the table says {a.burn_default!r}"
        return
    assert a.burn_default is not None, f"{key}: document burn's default {read!r} (`burn_default`) in the table"
    assert _same(a.burn_default, read), f"{key}: documented burn default {a.burn_default!r}, burn's config has {read!r}"


def test_every_default_the_probe_reads_belongs_to_an_omittable_attribute() -> None:
    stale = sorted(set(BURN_DEFAULTS) - set(OMITTABLE))
    assert not stale, f"burn_defaults() reads defaults of attributes the table does not have: {stale}"


def test_the_listed_reasons_name_omittable_attributes() -> None:
    for listing in (NO_TORCH_SOURCE, NO_BURN_SOURCE):
        assert set(listing) <= set(OMITTABLE), sorted(set(listing) - set(OMITTABLE))


@pytest.mark.parametrize("key", sorted(OMITTABLE))
def test_a_default_that_names_an_attribute_names_one_of_its_owner(key: str) -> None:
    a, _ = OMITTABLE[key]
    for documented in (a.torch_default, a.burn_default):
        if isinstance(documented, str) and a.type != "str":
            assert _reference(a, documented, key) is not None, (
                f"{key}: a {a.type} attribute documents the default {documented!r}, which is not the name of "
                f"another attribute of its owner ({', '.join(SIBLINGS[key])})"
            )


def test_the_tables_show_both_defaults_where_they_differ() -> None:
    from runner.contract.ops import attrs_table

    table = attrs_table()
    row = next(line for line in table.splitlines() if line.startswith("| `sgd` | `dampening` |"))
    assert "torch `0.0`" in row and "burn `0.1`" in row and "differ" in row
    same = next(line for line in table.splitlines() if line.startswith("| `adam` | `beta1` |"))
    assert "`0.9` on both" in same
    module = next(line for line in table.splitlines() if line.startswith("| `MultiheadAttention(...)` | `dropout` |"))
    assert "torch `0.0`" in module and "burn `0.1`" in module and "differ" in module


def test_the_tables_say_none_and_the_named_attribute() -> None:
    from runner.contract.ops import omitted_defaults

    clamp = OPS["clamp"].attr("min")
    stride = OPS["max_pool2d"].attr("stride")
    assert clamp is not None and stride is not None
    assert omitted_defaults(clamp) == "omitted: none on both"
    assert omitted_defaults(stride) == "omitted: `kernel_size`'s value on both"


def test_burns_sgd_dampening_default_is_not_torchs() -> None:
    """The defect of issue 17: an omitted dampening reaches burn as burn's own 0.1, not torch's 0."""
    sgd = OPS["sgd"].attr("dampening")
    assert sgd is not None and sgd.default is OMITTED
    assert _same(0.1, BURN_DEFAULTS["sgd.dampening"])
    assert torch_signature_defaults("torch.optim.SGD")["dampening"] == 0
