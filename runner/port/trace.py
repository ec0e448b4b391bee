"""Trace a module's `forward` with torch.fx: its graph, where each node comes from in the user's
code (`file:line`, the deepest frame of the user's file when the node was made), the shapes of
every value for the given inputs (`ShapeProp` on a copy of the module, so the user's running
statistics stay as they were), and every reason the trace cannot stand for the module
(`Refusal`): data-dependent control flow (a `bool()` or an `iter()` of a traced value: the trace
goes on as if the branch were taken, so that the other reasons are found too), a `torch.no_grad()`
region (tracing does not record it).

Standard modules (`torch.nn.*`) are leaves, except the containers and PyTorch's own transformer
encoder (`TransformerEncoder`, `TransformerEncoderLayer`), whose `forward` checks its inputs
with Python branches: they are traced through a decomposition that does what their training
forward does without masks (`_encoder`, `_encoder_layer`), so the user's names of their parts
(`encoder.layers.0.norm1`) survive.
"""

from __future__ import annotations

import copy
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BadInput

_THIS_DIR = str(Path(__file__).resolve().parent)


@dataclass(frozen=True)
class Where:
    file: str
    line: int

    def text(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Refusal:
    where: Where | None
    kind: str  # "control flow", "no_grad", "burn lacks", "language lacks", "module", "input"
    message: str

    def text(self) -> str:
        place = self.where.text() if self.where is not None else "(no line)"
        return f"{place}: {self.kind}: {self.message}"


@dataclass(frozen=True)
class InputSpec:
    shape: tuple[int, ...]
    dtype: str = "float"  # float or int
    high: int | None = None  # int: values in [0, high)

    def describe(self) -> str:
        dims = "x".join(map(str, self.shape))
        return dims if self.dtype == "float" else f"{dims}:int:{self.high}"


@dataclass
class Traced:
    graph: Any  # torch.fx.Graph
    root: Any  # the module
    where: dict[str, Where] = field(default_factory=dict)  # node name -> the user's line
    refusals: list[Refusal] = field(default_factory=list)


def _torch_dir() -> str:
    import torch

    return str(Path(torch.__file__).resolve().parent)


def user_where(user_file: Path, frames: list[traceback.FrameSummary]) -> Where | None:
    """The deepest frame in the user's file; else the deepest outside torch and this package."""
    torch_dir = _torch_dir()
    mine = [f for f in frames if Path(f.filename).resolve() == user_file]
    if mine:
        return Where(mine[-1].filename, mine[-1].lineno or 0)
    other = [
        f
        for f in frames
        if not str(Path(f.filename).resolve()).startswith((torch_dir, _THIS_DIR)) and "<" not in f.filename
    ]
    if other:
        return Where(other[-1].filename, other[-1].lineno or 0)
    return None


def _encoder_layer(
    layer: Any, src: Any, src_mask: Any = None, src_key_padding_mask: Any = None, is_causal: bool = False
) -> Any:
    """`TransformerEncoderLayer.forward` in training, without masks: its `_sa_block` and
    `_ff_block` (the module's own methods, so its submodules are called by their names)."""
    x = src
    if layer.norm_first:
        x = x + layer._sa_block(layer.norm1(x), None, None, is_causal=False)
        x = x + layer._ff_block(layer.norm2(x))
    else:
        x = layer.norm1(x + layer._sa_block(x, None, None, is_causal=False))
        x = layer.norm2(x + layer._ff_block(x))
    return x


def _encoder(encoder: Any, src: Any, mask: Any = None, src_key_padding_mask: Any = None, is_causal: Any = None) -> Any:
    """`TransformerEncoder.forward` without masks: each layer, then the final norm if any."""
    out = src
    for layer in encoder.layers:
        out = layer(out)
    if encoder.norm is not None:
        out = encoder.norm(out)
    return out


def trace(module: Any, inputs: list[InputSpec], user_file: Path, seed: int = 0) -> Traced:
    import torch
    import torch.fx as fx

    traced = Traced(graph=None, root=module)
    decomposed = {torch.nn.TransformerEncoder: _encoder, torch.nn.TransformerEncoderLayer: _encoder_layer}
    containers = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)

    class Tracer(fx.Tracer):
        def is_leaf_module(self, m: Any, qualified_name: str) -> bool:
            if type(m) in decomposed or isinstance(m, containers):
                return False
            return type(m).__module__.startswith("torch.nn")

        def call_module(self, m: Any, forward: Any, args: Any, kwargs: Any) -> Any:
            special = decomposed.get(type(m))
            if special is not None:
                where = user_where(user_file, traceback.extract_stack())
                masks = [k for k, v in kwargs.items() if v is not None and k != "is_causal"] + [
                    f"argument {i + 2}" for i, a in enumerate(args[1:]) if a is not None
                ]
                if masks:
                    traced.refusals.append(
                        Refusal(where, "language lacks", f"{type(m).__name__} with a mask ({', '.join(masks)})")
                    )
                if kwargs.get("is_causal"):
                    traced.refusals.append(Refusal(where, "language lacks", f"{type(m).__name__}(is_causal=True)"))

                def forward(*a: Any, **k: Any) -> Any:
                    return special(m, a[0])

            return super().call_module(m, forward, args, kwargs)

        def create_node(
            self, kind: str, target: Any, args: Any, kwargs: Any, name: Any = None, type_expr: Any = None
        ) -> Any:
            node = super().create_node(kind, target, args, kwargs, name, type_expr)
            where = user_where(user_file, traceback.extract_stack())
            if where is not None:
                traced.where[node.name] = where
            if kind not in ("placeholder", "output", "get_attr") and not torch.is_grad_enabled():
                traced.refusals.append(
                    Refusal(
                        where,
                        "no_grad",
                        "a torch.no_grad() region in forward (burn has no no_grad scope, and tracing does not record "
                        "it); write `.detach()` on its result instead (burn's detach of a computed value is a constant)",
                    )
                )
            return node

        def to_bool(self, obj: Any) -> bool:
            where = user_where(user_file, traceback.extract_stack())
            traced.refusals.append(
                Refusal(
                    where,
                    "control flow",
                    "a Python branch on a tensor's value (data-dependent control flow that tracing cannot capture: "
                    "the branch taken would be fixed in the port)",
                )
            )
            return True

        def iter(self, obj: Any) -> Any:
            where = user_where(user_file, traceback.extract_stack())
            traced.refusals.append(
                Refusal(where, "control flow", "iterating over a traced tensor (its length or values decide the loop)")
            )
            raise fx.proxy.TraceError("iteration over a traced value")

    tracer = Tracer()
    tracer.record_stack_traces = False
    try:
        graph = tracer.trace(module)
    except Exception as err:
        where = user_where(user_file, traceback.extract_tb(err.__traceback__))
        if not traced.refusals or not isinstance(err, fx.proxy.TraceError):
            traced.refusals.append(
                Refusal(where, "trace", f"torch.fx cannot trace forward: {type(err).__name__}: {err}")
            )
        return traced
    traced.graph = graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(inputs):
        names = ", ".join(n.target for n in placeholders)
        raise BadInput(
            f"--input: forward takes {len(placeholders)} tensor arguments ({names}); {len(inputs)} --input given"
        )
    _propagate_shapes(module, graph, inputs, seed)
    return traced


def example_inputs(inputs: list[InputSpec], seed: int) -> list[Any]:
    import torch

    gen = torch.Generator().manual_seed(seed)
    out = []
    for spec in inputs:
        if spec.dtype == "int":
            assert spec.high is not None
            out.append(torch.randint(0, spec.high, spec.shape, generator=gen))
        else:
            out.append(torch.randn(*spec.shape, generator=gen))
    return out


def _propagate_shapes(module: Any, graph: Any, inputs: list[InputSpec], seed: int) -> None:
    """Every node's value for example inputs (`node.meta["value"]`): shapes, and the numbers a
    `size()` gives, on a copy of the module (its buffers change in training). The graph is run
    node by node here, not through a `GraphModule`: torch.fx writes module names into the Python
    source of its generated `forward` without escaping them, so a name with a quote in it would
    make that code fail (or do something else)."""
    import torch
    import torch.fx as fx

    copied = copy.deepcopy(module)
    values: dict[str, Any] = {}
    examples = iter(example_inputs(inputs, seed))

    def load(a: Any) -> Any:
        return fx.node.map_arg(a, lambda n: values[n.name])

    try:
        for n in graph.nodes:
            if n.op == "placeholder":
                values[n.name] = next(examples)
            elif n.op == "get_attr":
                obj: Any = copied
                for part in str(n.target).split("."):
                    obj = getattr(obj, part)
                values[n.name] = obj
            elif n.op == "call_module":
                values[n.name] = copied.get_submodule(str(n.target))(*load(n.args), **load(n.kwargs))
            elif n.op == "call_function":
                values[n.name] = n.target(*load(n.args), **load(n.kwargs))
            elif n.op == "call_method":
                args = load(n.args)
                values[n.name] = getattr(args[0], str(n.target))(*args[1:], **load(n.kwargs))
            elif n.op == "output":
                values[n.name] = load(n.args[0])
    except Exception as err:
        raise BadInput(
            f"forward with inputs {[s.describe() for s in inputs]} raised {type(err).__name__}: {err}"
        ) from None
    for n in graph.nodes:
        value = values.get(n.name)
        n.meta["value"] = value
        if isinstance(value, torch.Tensor):
            n.meta["shape"] = tuple(value.shape)
            n.meta["dtype"] = "int" if not value.is_floating_point() else "float"
