"""Each framework's own default of every attribute a program may omit, read from the framework.

The table (`runner/contract/ops/`) documents, for each `OMITTED` attribute of every operation and
module kind, torch's default (`torch_default`) and burn's (`burn_default`): the documentation
tables show them, and a burn default that differs from torch's is a difference a port meets
without writing anything. Here each documented value is held against its framework:

- torch's against the signature of the callable the port calls (`inspect.signature`; the
  documented signature line of a builtin such as `torch.nn.functional.gelu`): the op's
  `torch_call` or `torch_signature`, a module kind's `torch_class`;
- burn's against `_probe.burn_defaults()`, which reads burn 0.22.1's `Config::new()` defaults in
  the probe (`rust_probe/src/program/defaults.rs`).

The tests are generic over the table: an attribute any family adds is checked when it lands.
An attribute with no framework source says why in `NO_TORCH_SOURCE` / `NO_BURN_SOURCE`.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import math
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

NO_BURN_SOURCE: dict[str, str] = {
    "gelu.approximate": "burn has two functions (`gelu`, `gelu_approximate`) and no setting: "
    "the port calls `gelu` (exact) for an omitted approximate",
    "linear_lr.start_factor": "`LinearLrSchedulerConfig::new` takes every value (no default): "
    "the port writes torch's (`burn_writes_torch_default`)",
    "linear_lr.end_factor": "as start_factor",
    "linear_lr.total_iters": "as start_factor",
}
"""Omittable attributes burn's configs hold no default for (besides those with `burn_unsupported`
values, whose burn side is refused), and why."""

AWAITING_BURN_DEFAULT: dict[str, str] = {
    "cross_entropy.label_smoothing": "the losses family documents burn's default (issue 17): "
    "`CrossEntropyLossConfig.smoothing` is None, no smoothing",
    "gelu.approximate": "the layers family documents burn's default (issue 17): `gelu`, exact",
}
"""Attributes whose `burn_default` another family's table does not document yet (a strict xfail:
it fails once they do, so the entry is removed then)."""

TUPLE_ELEMENTS: dict[str, tuple[str, int]] = {"beta1": ("betas", 0), "beta2": ("betas", 1)}
"""Attributes that are one element of a torch argument (Adam's `betas`)."""


def _omittable() -> Iterator[tuple[str, AttrSpec, str | None]]:
    """(`owner.attr`, its spec, the torch callable the port calls) of every omittable attribute."""
    for op in OPS.values():
        for a in op.attrs:
            if a.default is OMITTED:
                yield f"{op.name}.{a.name}", a, op.torch_call or op.torch_signature
    for m in MODULES.values():
        for a in m.attrs:
            if a.default is OMITTED:
                yield f"{m.source}.{a.name}", a, m.torch_class


OMITTABLE = {key: (a, source) for key, a, source in _omittable()}
BURN_DEFAULTS: dict[str, Any] = _probe.burn_defaults()


def _same(documented: AttrValue, read: Any) -> bool:
    """The documented default equals the one read: booleans and strings exactly, numbers to float32
    (burn keeps most hyperparameters as f32: 1e-5 reads back as 9.99999974e-06)."""
    if isinstance(documented, bool) or isinstance(read, bool):
        return type(documented) is type(read) and documented == read
    if isinstance(documented, (int, float)) and isinstance(read, (int, float)):
        return math.isclose(float(documented), float(read), rel_tol=1e-6, abs_tol=1e-12)
    return bool(documented == read)


def _callable(path: str) -> Any:
    module_name, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module_name), name)


def torch_signature_defaults(path: str) -> dict[str, Any]:
    """Each keyword's default in torch's signature of `path`; for a builtin without one, the
    signature line its docstring documents (`gelu(input, approximate = 'none') -> Tensor`)."""
    target = _callable(path)
    try:
        params = inspect.signature(target).parameters
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
    return {a.arg: ast.literal_eval(d) for a, d in zip(named, defaults)}


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
    assert a.torch_default is not None, f"{key}: document torch's default (`torch_default`) in the table"
    defaults = torch_signature_defaults(source)
    name, index = TUPLE_ELEMENTS.get(a.name, (a.torch_name or a.name, None))
    assert name in defaults, f"{key}: {source} has no keyword {name!r} with a default (it has {sorted(defaults)})"
    read = defaults[name] if index is None else defaults[name][index]
    assert _same(a.torch_default, read), f"{key}: documented torch default {a.torch_default!r}, {source} has {read!r}"


def _burn_cases() -> list[Any]:
    return [
        pytest.param(key, marks=pytest.mark.xfail(strict=True, reason=AWAITING_BURN_DEFAULT[key]))
        if key in AWAITING_BURN_DEFAULT
        else key
        for key in sorted(OMITTABLE)
    ]


@pytest.mark.parametrize("key", _burn_cases())
def test_the_documented_burn_default_is_burns_own(key: str) -> None:
    a, _ = OMITTABLE[key]
    if "burn" not in a.sides:
        assert a.burn_default is None, f"{key}: burn never sees it, so it has no burn default"
        return
    if key in NO_BURN_SOURCE:
        assert key not in BURN_DEFAULTS, f"{key}: listed without a burn source, but the probe reads one"
        assert a.burn_default is not None or a.burn_writes_torch_default, (
            f"{key}: document what burn does when it is omitted (`burn_default`)"
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
    for listing in (NO_TORCH_SOURCE, NO_BURN_SOURCE, AWAITING_BURN_DEFAULT):
        assert set(listing) <= set(OMITTABLE), sorted(set(listing) - set(OMITTABLE))


def test_the_tables_show_both_defaults_where_they_differ() -> None:
    from runner.contract.ops import attrs_table

    table = attrs_table()
    row = next(line for line in table.splitlines() if line.startswith("| `sgd` | `dampening` |"))
    assert "torch `0.0`" in row and "burn `0.1`" in row and "differ" in row
    same = next(line for line in table.splitlines() if line.startswith("| `adam` | `beta1` |"))
    assert "`0.9` on both" in same


def test_burns_sgd_dampening_default_is_not_torchs() -> None:
    """The defect of issue 17: an omitted dampening reaches burn as burn's own 0.1, not torch's 0."""
    sgd = OPS["sgd"].attr("dampening")
    assert sgd is not None and sgd.default is OMITTED
    assert _same(0.1, BURN_DEFAULTS["sgd.dampening"])
    assert torch_signature_defaults("torch.optim.SGD")["dampening"] == 0
