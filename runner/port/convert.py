"""A traced module as a program of the language (`docs/program-ir.md`): the forward's nodes as
statements inside a training loop, with the module's own values as the initial data.

- A standard module the language has a kind for (`Linear`, `Conv2d`, `BatchNorm2d`, `LayerNorm`,
  `MultiheadAttention`, ...) is a module declaration named after the user's qualified name
  (`encoder.layers.0.norm1` -> `encoder_layers_0_norm1`; `names` keeps the map), with the
  attributes the instance has that differ from torch's defaults: an argument equal to torch's
  default is taken as omitted, as a porter reading `nn.MultiheadAttention(d, h)` writes burn's
  config without it, so each framework applies its own default.
- An activation module (`nn.ReLU`, `nn.Flatten`, `nn.MaxPool2d`, ...) and a function or method
  (`F.relu`, `torch.flatten`, `x.view(...)`, `+`) are the language's operation; sizes read with
  `x.size(0)` / `x.shape` are the numbers of the traced run (the inputs' shapes are fixed).
- A tensor of lower rank in an elementwise operation is reshaped to the other's rank first, as a
  burn port does (burn's elementwise operations take equal ranks).
- Params and buffers get their values from the module (`arrays`, by program tensor name), a
  param that does not require grad is frozen (`freeze`).

What has no counterpart is a `Refusal` with the user's line: an operation burn lacks (`BURN_LACKS`,
from burn 0.22.1's sources), an operation, module or argument the language lacks.
"""

from __future__ import annotations

import keyword
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contract.ops import MODULES, OMITTED, OPS, REQUIRED, RESERVED_NAMES
from .trace import InputSpec, Refusal, Traced, Where

MAX_NAME = 64

BURN_LACKS: dict[str, str] = {
    "erfinv": "burn-tensor 0.22.1 has `erf` but no `erfinv`",
    "lgamma": "burn-tensor 0.22.1 has no `lgamma`",
    "digamma": "burn-tensor 0.22.1 has no `digamma`",
    "polygamma": "burn-tensor 0.22.1 has no `polygamma`",
    "i0": "burn-tensor 0.22.1 has no Bessel function `i0`",
}
"""torch functions burn 0.22.1 has no operation for (read in burn-tensor's `Tensor` API)."""

LOSSES = {
    "cross_entropy": "cross_entropy",
    "nll_loss": "nll_loss",
    "mse_loss": "mse_loss",
    "huber_loss": "huber_loss",
    "smooth_l1_loss": "smooth_l1_loss",
    "output": "output",
}
"""`--loss` names: a loss of the language over (output, target), or `output` (forward returns the loss)."""


class Refused(Exception):
    def __init__(self, message: str, kind: str = "language lacks") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class T:
    """A tensor value of the program: its name, shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "float"


@dataclass
class Line:
    """What one forward statement of the program stands for in the user's code."""

    text: str
    user: str  # the user's module (qualified name) or operation
    where: Where | None


@dataclass
class Conversion:
    source: str
    arrays: dict[str, np.ndarray]
    lines: dict[int, Line]  # program line -> the user's module or operation
    modules: dict[str, str]  # program module name -> the user's qualified name
    params: dict[str, str]  # program tensor name -> the user's state_dict key
    output: T | None = None
    refusals: list[Refusal] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    """The program names of the forward's parameters, in order (`Names.give` of the user's)."""


class Names:
    """Program names for the user's names: identifiers of the language (a letter, then letters,
    digits or `_`, at most 64), never reserved, never a Python keyword, distinct for distinct names."""

    def __init__(self) -> None:
        # the training loop's own names
        self.taken: set[str] = {"loss", "losses", "opt", "step"}

    def give(self, wanted: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", wanted).strip("_") or "v"
        base = re.sub(r"_+", "_", base)
        if not base[0].isalpha():
            base = "m_" + base
        base = base[: MAX_NAME - 6]
        if base in RESERVED_NAMES or keyword.iskeyword(base):
            base = "t_" + base
        name, n = base, 1
        while name in self.taken or name in RESERVED_NAMES or keyword.iskeyword(name) or name.startswith("_"):
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name


def _num(value: float) -> str:
    text = repr(float(value))
    return text if "e" in text or "." in text or "inf" in text or "nan" in text else text + ".0"


def _given(owner_attrs: Sequence[Any], attrs: dict[str, Any]) -> dict[str, Any]:
    """`attrs` without those equal to torch's default (taken as omitted) or to the language's."""
    out = {}
    specs = {a.name: a for a in owner_attrs}
    for name, value in attrs.items():
        spec = specs[name]
        if spec.default is OMITTED:
            default = spec.torch_default
            if isinstance(default, str) and default in attrs:
                default = attrs[default]
            if default is not None and value == default and type(value) is type(default):
                continue
            if (
                default is not None
                and isinstance(value, float)
                and isinstance(default, (int, float))
                and value == default
            ):
                continue
        elif spec.default is not REQUIRED and value == spec.default:
            continue
        out[name] = value
    return out


def _kw(attrs: dict[str, Any]) -> str:
    parts = []
    for k, v in attrs.items():
        if isinstance(v, bool):
            parts.append(f"{k}={v}")
        elif isinstance(v, float):
            parts.append(f"{k}={_num(v)}")
        elif isinstance(v, str):
            parts.append(f"{k}={v!r}")
        else:
            parts.append(f"{k}={v}")
    return ", ".join(parts)


def _square(value: Any, what: str) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, (tuple, list)) and value and all(v == value[0] for v in value) and isinstance(value[0], int):
        return int(value[0])
    raise Refused(f"{what} {value!r}: the language takes one number for every side (a square kernel, equal strides)")


# ---- modules --------------------------------------------------------------------------------------


def module_declaration(m: Any) -> tuple[str, dict[str, Any], str] | None:
    """(language source name, attributes, kind) of a module the language has a kind for; None for
    an activation-like module (an operation); `Refused` for one it cannot take."""
    import torch.nn as nn

    attrs: dict[str, Any]
    if isinstance(m, nn.Linear):
        return "Linear", {"d_in": m.in_features, "d_out": m.out_features, "bias": m.bias is not None}, "linear"
    if isinstance(m, (nn.Conv1d, nn.Conv2d)):
        if m.padding_mode != "zeros":
            raise Refused(f"padding_mode={m.padding_mode!r} (the language's convolutions pad with zeros)")
        if isinstance(m.padding, str):
            raise Refused(f"padding={m.padding!r} (the language takes a number)")
        kind = "conv2d" if isinstance(m, nn.Conv2d) else "conv1d"
        attrs = {
            "in_channels": m.in_channels,
            "out_channels": m.out_channels,
            "kernel_size": _square(m.kernel_size, "kernel_size"),
            "stride": _square(m.stride, "stride"),
            "padding": _square(m.padding, "padding"),
            "dilation": _square(m.dilation, "dilation"),
            "groups": m.groups,
            "bias": m.bias is not None,
        }
        return ("Conv2d" if kind == "conv2d" else "Conv1d"), attrs, kind
    if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
        if not m.track_running_stats or m.momentum is None:
            raise Refused("BatchNorm without running statistics or with momentum=None (a cumulative average)")
        kind = "batch_norm2d" if isinstance(m, nn.BatchNorm2d) else "batch_norm1d"
        attrs = {
            "num_features": m.num_features,
            "eps": float(m.eps),
            "momentum": float(m.momentum),
            "affine": m.affine,
        }
        return ("BatchNorm2d" if kind == "batch_norm2d" else "BatchNorm1d"), attrs, kind
    if isinstance(m, nn.LayerNorm):
        if len(m.normalized_shape) != 1:
            raise Refused(f"LayerNorm over {len(m.normalized_shape)} dims (the language normalizes the last one)")
        if m.elementwise_affine and m.bias is None:
            raise Refused("LayerNorm(bias=False) with a weight (the language's has both or neither)")
        attrs = {
            "normalized_shape": m.normalized_shape[0],
            "eps": float(m.eps),
            "elementwise_affine": m.elementwise_affine,
        }
        return "LayerNorm", attrs, "layer_norm"
    if isinstance(m, nn.GroupNorm):
        attrs = {"num_groups": m.num_groups, "num_channels": m.num_channels, "eps": float(m.eps), "affine": m.affine}
        return "GroupNorm", attrs, "group_norm"
    if isinstance(m, nn.Embedding):
        if m.max_norm is not None or m.scale_grad_by_freq or m.sparse:
            raise Refused("Embedding with max_norm, scale_grad_by_freq or sparse")
        attrs = {"num_embeddings": m.num_embeddings, "embedding_dim": m.embedding_dim}
        if m.padding_idx is not None:
            attrs["padding_idx"] = m.padding_idx
        return "Embedding", attrs, "embedding"
    if isinstance(m, nn.Dropout) and type(m) is nn.Dropout:
        return "Dropout", {"p": float(m.p)}, "dropout"
    if isinstance(m, nn.MultiheadAttention):
        if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
            raise Refused("MultiheadAttention with kdim/vdim, add_bias_kv or add_zero_attn")
        attrs = {
            "embed_dim": m.embed_dim,
            "num_heads": m.num_heads,
            "dropout": float(m.dropout),
            "bias": m.in_proj_bias is not None,
            "batch_first": m.batch_first,
        }
        return "MultiheadAttention", attrs, "multihead_attention"
    return None


def module_tensors(kind: str, prog: str, qual: str) -> dict[str, str]:
    """Program tensor name -> the module's state_dict key, for the params and buffers of a kind."""
    names = [p.name for p in MODULES[kind].params]
    out = {}
    for short in names:
        user = short
        if kind == "multihead_attention" and short.startswith("out_proj_"):
            user = "out_proj." + short.removeprefix("out_proj_")
        out[f"{prog}.{short}"] = f"{qual}.{user}" if qual else user
    return out


class Converter:
    def __init__(self, traced: Traced, inputs: list[InputSpec]) -> None:
        self.traced = traced
        self.inputs = inputs
        self.names = Names()
        self.decls: list[str] = []
        self.body: list[Line] = []
        self.env: dict[str, Any] = {}
        self.arrays: dict[str, np.ndarray] = {}
        self.params: dict[str, str] = {}
        self.modules: dict[str, str] = {}  # qualified -> program module name
        self.kinds: dict[str, str] = {}
        self.frozen: list[str] = []
        self.input_names: list[str] = []
        self.refusals: list[Refusal] = []
        self.node: Any = None
        self.state = {k: v.detach() for k, v in traced.root.state_dict(keep_vars=True).items()}
        self.requires_grad = {k: bool(p.requires_grad) for k, p in traced.root.named_parameters()}

    # -- helpers --

    def where(self) -> Where | None:
        return self.traced.where.get(self.node.name) if self.node is not None else None

    def emit(
        self, expr: str, shape: tuple[int, ...], dtype: str = "float", user: str | None = None, name: str | None = None
    ) -> T:
        name = self.names.give(name or (self.node.name if self.node is not None else "t"))
        self.body.append(Line(f"{name} = {expr}", user or self.describe(), self.where()))
        return T(name, tuple(shape), dtype)

    def describe(self) -> str:
        n = self.node
        if n.op == "call_module":
            return str(n.target)
        if n.op == "call_method":
            return f".{n.target}()"
        target = n.target
        mod = getattr(target, "__module__", None) or ""
        name = getattr(target, "__name__", str(target))
        if mod in ("_operator", "operator"):
            return {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "matmul": "@", "neg": "-", "pow": "**"}.get(
                name, name
            )
        prefix = "torch.nn.functional" if "functional" in mod else "torch"
        return f"{prefix}.{name}"

    def shape_of(self) -> tuple[int, ...]:
        shape = self.node.meta.get("shape")
        if shape is None:
            raise Refused("a value that is not a tensor where a tensor is expected")
        return tuple(shape)

    def dtype_of(self) -> str:
        return str(self.node.meta.get("dtype", "float"))

    def declare_tensor(self, key: str, value: Any, role: str) -> T:
        import torch

        name = self.names.give(key)
        shape = tuple(value.shape)
        if not 1 <= len(shape) <= 4:
            raise Refused(f"{key}: a tensor of rank {len(shape)} (the language takes ranks 1 to 4)")
        dims = ", ".join(map(str, shape))
        if role == "param":
            self.decls.append(f"{name} = param({dims})")
        else:
            if not torch.is_floating_point(value):
                raise Refused(f"{key}: an integer buffer")
            self.decls.append(f"{name} = input({dims})")
        self.arrays[name] = value.detach().to(torch.float32).numpy()
        self.params[name] = key
        if role == "param" and not self.requires_grad.get(key, True):
            self.frozen.append(name)
        return T(name, shape)

    # -- nodes --

    def run(self) -> None:
        graph = self.traced.graph
        for node in graph.nodes:
            self.node = node
            try:
                self.env[node.name] = self.visit(node)
            except Refused as r:
                if r.kind != "follows":
                    self.refusals.append(Refusal(self.where(), r.kind, f"{self.describe()}: {r}"))
                # a stand-in of the traced value's shape, so that later nodes are judged on their own
                self.env[node.name] = _ghost(node.meta.get("value"))
            self.node = None

    def arg(self, a: Any) -> Any:
        """A node argument as a value: a `T`, a number, a list of them, None."""
        import torch.fx as fx

        if isinstance(a, fx.Node):
            value = self.env.get(a.name)
            if value is None and a.meta.get("value") is not None and not hasattr(a.meta["value"], "shape"):
                return a.meta["value"]
            return value
        if isinstance(a, (list, tuple)):
            return type(a)(self.arg(x) for x in a)
        return a

    def visit(self, node: Any) -> Any:
        if node.op == "placeholder":
            index = [n for n in self.traced.graph.nodes if n.op == "placeholder"].index(node)
            spec = self.inputs[index]
            name = self.names.give(str(node.target))
            self.input_names.append(name)
            dims = ", ".join(map(str, spec.shape))
            if not 1 <= len(spec.shape) <= 4:
                raise Refused(f"input {node.target}: rank {len(spec.shape)} (the language takes ranks 1 to 4)")
            if spec.dtype == "int":
                self.decls.append(f'{name} = input({dims}, dtype="int", high={spec.high})')
            else:
                self.decls.append(f"{name} = input({dims})")
            return T(name, spec.shape, spec.dtype)
        if node.op == "get_attr":
            key = str(node.target)
            if key in self.state:
                role = "param" if key in self.requires_grad else "buffer"
                return self.declare_tensor(key, self.state[key], role)
            return node.meta.get("value")
        if node.op == "output":
            value = self.arg(node.args[0])
            if not isinstance(value, T):
                raise Refused("forward returns something other than one tensor (a tuple, a dict)")
            return value
        if node.op == "call_module":
            return self.call_module(node)
        if node.op in ("call_function", "call_method"):
            value = node.meta.get("value")
            if value is not None and not hasattr(value, "shape") and not isinstance(value, (tuple, list)):
                # a size, a number: the traced run's own (the inputs' shapes are fixed)
                if isinstance(value, (int, float, bool)):
                    return value
            import torch

            if isinstance(value, torch.Size):
                return tuple(value)
            return self.call(node)
        raise Refused(f"an fx node of kind {node.op}")

    def call_module(self, node: Any) -> Any:
        import torch.nn as nn

        qual = str(node.target)
        m = self.traced.root.get_submodule(qual)
        args = [self.arg(a) for a in node.args]
        kwargs = {k: self.arg(v) for k, v in node.kwargs.items()}
        try:
            declared = module_declaration(m)
        except Refused as r:
            raise Refused(f"{type(m).__name__}: {r}") from None
        if declared is not None:
            source, attrs, kind = declared
            prog = self.modules.get(qual)
            if prog is None:
                prog = self.names.give(qual)
                self.modules[qual] = prog
                self.kinds[prog] = kind
                given = _given(MODULES[kind].attrs, attrs)
                positional = [a.name for a in MODULES[kind].attrs if a.positional]
                pos = ", ".join(str(given.pop(n)) for n in positional if n in given)
                rest = _kw(given)
                self.decls.append(f"{prog} = {source}({', '.join(x for x in (pos, rest) if x)})")
                for tensor, key in module_tensors(kind, prog, qual).items():
                    if key in self.state:
                        self.arrays[tensor] = self.state[key].detach().float().numpy()
                        self.params[tensor] = key
                        if key in self.requires_grad and not self.requires_grad[key]:
                            self.frozen.append(tensor)
            if kind == "multihead_attention":
                return self.attention(prog, args, kwargs)
            x = args[0]
            if not isinstance(x, T):
                raise Refused(f"{qual} called on something other than a tensor")
            if kind == "embedding" and x.dtype != "int":
                raise Refused(f"{qual}: an Embedding of float values")
            return self.emit(f"{prog}({x.name})", self.shape_of(), user=qual, name=f"{prog}_out")
        # activation-like modules: the operation they are
        x = args[0] if args else None
        if isinstance(m, nn.Identity):
            return x
        simple = {nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.SiLU: "silu"}
        for cls, op in simple.items():
            if type(m) is cls:
                return self.op(op, [x], {}, user=qual)
        if type(m) is nn.GELU:
            return self.op("gelu", [x], {"approximate": m.approximate}, user=qual)
        if type(m) is nn.LeakyReLU:
            return self.op("leaky_relu", [x], {"negative_slope": float(m.negative_slope)}, user=qual)
        if type(m) in (nn.Softmax, nn.LogSoftmax):
            if m.dim is None:
                raise Refused(f"{type(m).__name__}() without dim")
            return self.op("softmax" if type(m) is nn.Softmax else "log_softmax", [x], {"dim": m.dim}, user=qual)
        if type(m) is nn.Flatten:
            return self.op("flatten", [x], {"start_dim": m.start_dim, "end_dim": m.end_dim}, user=qual)
        if type(m) in (nn.MaxPool2d, nn.AvgPool2d):
            return self.pool(m, x, qual)
        if type(m) is nn.AdaptiveAvgPool2d:
            return self.op(
                "adaptive_avg_pool2d", [x], {"output_size": _square(m.output_size, "output_size")}, user=qual
            )
        raise Refused(f"the module torch.nn.{type(m).__name__} (no module kind of the language)")

    def pool(self, m: Any, x: Any, qual: str) -> T:
        import torch.nn as nn

        if m.ceil_mode or getattr(m, "return_indices", False):
            raise Refused(f"{type(m).__name__} with ceil_mode or return_indices")
        k = _square(m.kernel_size, "kernel_size")
        attrs: dict[str, Any] = {"kernel_size": k, "stride": _square(m.stride if m.stride is not None else k, "stride")}
        attrs["padding"] = _square(m.padding, "padding")
        if type(m) is nn.MaxPool2d:
            attrs["dilation"] = _square(m.dilation, "dilation")
            return self.op("max_pool2d", [x], attrs, user=qual)
        if m.divisor_override is not None:
            raise Refused("AvgPool2d(divisor_override=...)")
        attrs["count_include_pad"] = m.count_include_pad
        return self.op("avg_pool2d", [x], attrs, user=qual)

    def attention(self, prog: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        names = [
            "query",
            "key",
            "value",
            "key_padding_mask",
            "need_weights",
            "attn_mask",
            "average_attn_weights",
            "is_causal",
        ]
        bound = dict(zip(names, args)) | kwargs
        for k in ("key_padding_mask", "attn_mask"):
            if bound.get(k) is not None:
                raise Refused(f"MultiheadAttention with {k} (the language takes no mask here)")
        if bound.get("is_causal"):
            raise Refused("MultiheadAttention(is_causal=True)")
        q, k, v = bound["query"], bound["key"], bound["value"]
        shape = tuple(self.node.meta["value"][0].shape)
        out = self.emit(f"{prog}({q.name}, {k.name}, {v.name})", shape, user=str(self.node.target), name=f"{prog}_out")
        return (out, None)

    # -- operations --

    def op(self, op: str, tensors: list[Any], attrs: dict[str, Any], user: str | None = None) -> T:
        for t in tensors:
            if not isinstance(t, T):
                raise Refused(f"{op} of something other than a tensor ({t!r})")
        spec = OPS[op]
        given = _given(spec.attrs, attrs)
        positional = [a.name for a in spec.attrs if a.positional]
        parts = [t.name for t in tensors]
        # positional attributes in order, as long as none before them is left out
        for name in positional:
            if name in given:
                parts.append(_literal(given.pop(name)))
            else:
                break
        kw = _kw(given)
        text = f"{op}({', '.join(parts + ([kw] if kw else []))})"
        dtype = self.dtype_of() if self.node is not None and self.node.meta.get("dtype") else "float"
        return self.emit(text, self.shape_of(), dtype, user=user)

    def same_rank(self, a: T, b: T) -> tuple[T, T]:
        """Reshape the lower-rank operand to the other's rank (burn's elementwise ops take equal ranks)."""
        if len(a.shape) == len(b.shape):
            return a, b
        low, high = (a, b) if len(a.shape) < len(b.shape) else (b, a)
        shape = (1,) * (len(high.shape) - len(low.shape)) + (low.shape or (1,))
        if len(shape) > len(high.shape):
            shape = shape[-len(high.shape) :]
        name = self.names.give(low.name + "_r")
        dims = ", ".join(map(str, shape))
        self.body.append(Line(f"{name} = reshape({low.name}, [{dims}])", self.describe(), self.where()))
        lifted = T(name, shape, low.dtype)
        return (lifted, high) if low is a else (high, lifted)

    def binary(self, sym: str, a: Any, b: Any) -> T:
        if isinstance(a, T) and isinstance(b, T):
            if not a.shape:
                a = self.lift_scalar(a)
            if not b.shape:
                b = self.lift_scalar(b)
            a, b = self.same_rank(a, b)
            return self.emit(f"{a.name} {sym} {b.name}", self.shape_of())
        if isinstance(a, T) and isinstance(b, (int, float)) and not isinstance(b, bool):
            if sym == "@":
                raise Refused("a matrix product with a number")
            return self.emit(f"{a.name} {sym} {_num(b)}", self.shape_of())
        if isinstance(b, T) and isinstance(a, (int, float)) and not isinstance(a, bool):
            if sym in ("+", "*"):
                return self.emit(f"{_num(a)} {sym} {b.name}", self.shape_of())
            if sym == "-":
                return self.emit(f"-{b.name} + {_num(a)}", self.shape_of())
            raise Refused(f"a number {sym} a tensor (the language divides a tensor by a number only)")
        raise Refused(f"`{sym}` of {type(a).__name__} and {type(b).__name__}")

    def lift_scalar(self, t: T) -> T:
        name = self.names.give(t.name + "_r")
        self.body.append(Line(f"{name} = reshape({t.name}, [1])", self.describe(), self.where()))
        return T(name, (1,), t.dtype)

    def call(self, node: Any) -> Any:
        if node.op == "call_method":
            name = str(node.target)
        else:
            target = node.target
            if target is getattr:
                obj, attr = self.arg(node.args[0]), node.args[1]
                return self.attribute(obj, attr)
            if target is operator.getitem:
                obj, index = self.arg(node.args[0]), node.args[1]
                if isinstance(obj, tuple) and isinstance(index, int):
                    return obj[index]
                if isinstance(obj, _Max) and index in (0, 1):
                    return self.attribute(obj, "values" if index == 0 else "indices")
                raise Refused("indexing a tensor (x[...]); the language has narrow, index_select and gather")
            name = getattr(target, "__name__", str(target))
            module = getattr(target, "__module__", "") or ""
            if module in ("_operator", "operator"):
                return self.operator(name, [self.arg(a) for a in node.args])
        args = [self.arg(a) for a in node.args]
        kwargs = {k: self.arg(v) for k, v in node.kwargs.items()}
        handler: Callable[..., Any] | None = getattr(self, f"fn_{name}", None)
        short = name.removeprefix("special_")
        if short in BURN_LACKS:
            raise Refused(f"{BURN_LACKS[short]} (and the language has no `{short}`)", kind="burn lacks")
        if handler is None:
            raise Refused(f"`{name}` has no operation in the language (docs/program-ir.md section 3)")
        return handler(*args, **kwargs)

    def operator(self, name: str, args: list[Any]) -> Any:
        if name in ("gt", "lt") and isinstance(args[0], T) and isinstance(args[1], (int, float)):
            return self.op(f"{name}_scalar", [args[0]], {"scalar": float(args[1])})
        if name in ("gt", "lt") and isinstance(args[0], T) and isinstance(args[1], T):
            a, b = self.same_rank(args[0], args[1])
            return self.emit(f"{name}({a.name}, {b.name})", self.shape_of(), "bool")
        symbols = {
            "add": "+",
            "iadd": "+",
            "sub": "-",
            "isub": "-",
            "mul": "*",
            "imul": "*",
            "truediv": "/",
            "matmul": "@",
        }
        if name in symbols:
            return self.binary(symbols[name], *args)
        if name == "neg":
            return self.emit(f"-{args[0].name}", self.shape_of())
        if name == "pow":
            base, exp = args
            if isinstance(base, T) and isinstance(exp, int) and not isinstance(exp, bool):
                return self.emit(f"{base.name} ** {exp}", self.shape_of())
            if isinstance(base, T) and isinstance(exp, float) and exp == 0.5:
                return self.op("sqrt", [base], {})
            raise Refused("a power other than an integer exponent")
        raise Refused(f"the operator `{name}`")

    def attribute(self, obj: Any, attr: str) -> Any:
        if isinstance(obj, _Max):
            op = "max_dim" if obj.kind == "max" else "min_dim"
            if attr == "values":
                return self.op(op, [obj.x], {"dim": obj.dim, "keepdim": obj.keepdim})
            if attr == "indices":
                if obj.kind != "max":
                    raise Refused("min(dim).indices (the language has argmax only)")
                return self.op("argmax", [obj.x], {"dim": obj.dim, "keepdim": obj.keepdim})
        if attr in ("shape",) and isinstance(obj, T):
            return obj.shape
        raise Refused(f"the attribute `.{attr}`")

    # -- functions and methods by name (torch.X, F.X, tensor.X) --

    def _unary(op: str) -> Callable[..., T]:  # type: ignore[misc]
        def handler(self: Converter, x: Any, *rest: Any, **kw: Any) -> T:
            kw.pop("inplace", None)
            if rest or any(v is not None for v in kw.values()):
                raise Refused(f"{op} with arguments the language does not take ({rest}, {kw})")
            return self.op(op, [x], {})

        return handler

    fn_relu = _unary("relu")
    fn_sigmoid = _unary("sigmoid")
    fn_tanh = _unary("tanh")
    fn_exp = _unary("exp")
    fn_log = _unary("log")
    fn_sqrt = _unary("sqrt")
    fn_abs = _unary("abs")
    fn_silu = _unary("silu")
    fn_square = _unary("square")

    def fn_neg(self, x: Any) -> T:
        return self.emit(f"-{x.name}", self.shape_of())

    def fn_detach(self, x: Any) -> T:
        return self.op("detach", [x], {})

    def fn_contiguous(self, x: Any, memory_format: Any = None) -> Any:
        return x

    def fn_gelu(self, x: Any, approximate: str = "none") -> T:
        return self.op("gelu", [x], {"approximate": approximate})

    def fn_leaky_relu(self, x: Any, negative_slope: float = 0.01, inplace: bool = False) -> T:
        return self.op("leaky_relu", [x], {"negative_slope": float(negative_slope)})

    def fn_softmax(self, x: Any, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> T:
        if dim is None or dtype is not None:
            raise Refused("softmax without dim, or with dtype")
        return self.op("softmax", [x], {"dim": dim})

    def fn_log_softmax(self, x: Any, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> T:
        if dim is None or dtype is not None:
            raise Refused("log_softmax without dim, or with dtype")
        return self.op("log_softmax", [x], {"dim": dim})

    def fn_flatten(self, x: Any, start_dim: int = 0, end_dim: int = -1) -> T:
        return self.op("flatten", [x], {"start_dim": start_dim, "end_dim": end_dim})

    def fn_view(self, x: Any, *shape: Any, **kw: Any) -> T:
        return self.reshape(x)

    fn_reshape = fn_view

    def reshape(self, x: Any) -> T:
        dims = ", ".join(map(str, self.shape_of()))
        return self.emit(f"reshape({x.name}, [{dims}])", self.shape_of())

    def fn_matmul(self, a: Any, b: Any) -> T:
        return self.binary("@", a, b)

    def fn_add(self, a: Any, b: Any, alpha: Any = 1) -> T:
        if alpha != 1:
            raise Refused("add with alpha")
        return self.binary("+", a, b)

    def fn_sub(self, a: Any, b: Any, alpha: Any = 1) -> T:
        if alpha != 1:
            raise Refused("sub with alpha")
        return self.binary("-", a, b)

    def fn_mul(self, a: Any, b: Any) -> T:
        return self.binary("*", a, b)

    def fn_div(self, a: Any, b: Any, rounding_mode: Any = None) -> T:
        if rounding_mode is not None:
            raise Refused("div with rounding_mode")
        return self.binary("/", a, b)

    def fn_pow(self, a: Any, b: Any) -> Any:
        return self.operator("pow", [a, b])

    def reduce(self, op: str, x: Any, dim: Any, keepdim: bool) -> T:
        if dim is None:
            return self.op(op, [x], {})
        if isinstance(dim, (tuple, list)):
            if len(dim) != 1:
                raise Refused(f"{op} over several dims")
            dim = dim[0]
        if op == "sum":
            summed = self.op("sum_dim", [x], {"dim": dim})
            if keepdim:
                return summed
            return self.emit(f"squeeze({summed.name}, {dim})", self.shape_of())
        return self.op("mean_dim", [x], {"dim": dim, "keepdim": keepdim})

    def fn_mean(self, x: Any, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> T:
        return self.reduce("mean", x, dim, keepdim)

    def fn_sum(self, x: Any, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> T:
        return self.reduce("sum", x, dim, keepdim)

    def fn_max(self, x: Any, dim: Any = None, keepdim: bool = False) -> Any:
        if dim is None:
            raise Refused("max of a whole tensor, or of two tensors (the language has max_dim)")
        if isinstance(dim, T):
            raise Refused("torch.max of two tensors (an elementwise maximum)")
        return _Max("max", x, dim, keepdim)

    def fn_min(self, x: Any, dim: Any = None, keepdim: bool = False) -> Any:
        if dim is None or isinstance(dim, T):
            raise Refused("min of a whole tensor, or of two tensors (the language has min_dim)")
        return _Max("min", x, dim, keepdim)

    def fn_amax(self, x: Any, dim: Any, keepdim: bool = False) -> T:
        d = dim[0] if isinstance(dim, (tuple, list)) and len(dim) == 1 else dim
        return self.op("max_dim", [x], {"dim": d, "keepdim": keepdim})

    def fn_argmax(self, x: Any, dim: Any = None, keepdim: bool = False) -> T:
        if dim is None:
            raise Refused("argmax of a whole tensor")
        return self.op("argmax", [x], {"dim": dim, "keepdim": keepdim})

    def fn_var(self, x: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, correction: Any = None) -> T:
        if dim is None:
            raise Refused("var of a whole tensor")
        attrs: dict[str, Any] = {"dim": dim[0] if isinstance(dim, (tuple, list)) else dim, "keepdim": keepdim}
        if unbiased is not None:
            attrs["unbiased"] = unbiased
        if correction is not None:
            attrs["correction"] = correction
        return self.op("var", [x], attrs)

    def fn_gather(self, x: Any, dim: int, index: Any, sparse_grad: bool = False) -> T:
        return self.emit(f"gather({x.name}, {index.name}, dim={dim})", self.shape_of())

    def fn_index_select(self, x: Any, dim: int, index: Any) -> T:
        return self.emit(f"index_select({x.name}, {index.name}, dim={dim})", self.shape_of())

    def fn_unsqueeze(self, x: Any, dim: int) -> T:
        return self.op("unsqueeze", [x], {"dim": dim})

    def fn_squeeze(self, x: Any, dim: Any = None) -> T:
        if dim is None:
            raise Refused("squeeze without a dim")
        return self.op("squeeze", [x], {"dim": dim})

    def fn_transpose(self, x: Any, dim0: int, dim1: int) -> T:
        rank = len(x.shape)
        if {dim0 % rank, dim1 % rank} != {rank - 2, rank - 1}:
            raise Refused("transpose of dims other than the last two (the language's transpose swaps those)")
        return self.op("transpose", [x], {})

    def fn_t(self, x: Any) -> T:
        return self.fn_transpose(x, 0, 1)

    def fn_permute(self, x: Any, *dims: Any) -> T:
        order = list(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else list(dims)
        rank = len(x.shape)
        if order == [*range(rank - 2), rank - 1, rank - 2]:
            return self.op("transpose", [x], {})
        raise Refused("permute other than swapping the last two dims")

    def fn_cat(self, tensors: Any, dim: int = 0) -> T:
        names = ", ".join(t.name for t in tensors)
        return self.emit(f"cat({names}, dim={dim})", self.shape_of())

    def fn_stack(self, tensors: Any, dim: int = 0) -> T:
        names = ", ".join(t.name for t in tensors)
        return self.emit(f"stack({names}, dim={dim})", self.shape_of())

    def fn_clamp(self, x: Any, min: Any = None, max: Any = None) -> T:
        attrs = {k: float(v) for k, v in (("min", min), ("max", max)) if v is not None}
        return self.op("clamp", [x], attrs)

    fn_clip = fn_clamp

    def fn_where(self, cond: Any, a: Any, b: Any) -> T:
        return self.emit(f"where({cond.name}, {a.name}, {b.name})", self.shape_of())

    def fn_masked_fill(self, x: Any, mask: Any, value: Any) -> T:
        return self.emit(f"masked_fill({x.name}, {mask.name}, {_num(value)})", self.shape_of())

    def fn_max_pool2d(
        self,
        x: Any,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        dilation: Any = 1,
        ceil_mode: bool = False,
        return_indices: bool = False,
    ) -> T:
        if ceil_mode or return_indices:
            raise Refused("max_pool2d with ceil_mode or return_indices")
        k = _square(kernel_size, "kernel_size")
        s = _square(stride if stride not in (None, []) else k, "stride")
        return self.op(
            "max_pool2d",
            [x],
            {
                "kernel_size": k,
                "stride": s,
                "padding": _square(padding, "padding"),
                "dilation": _square(dilation, "dilation"),
            },
        )

    def fn_avg_pool2d(
        self,
        x: Any,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: Any = None,
    ) -> T:
        if ceil_mode or divisor_override is not None:
            raise Refused("avg_pool2d with ceil_mode or divisor_override")
        k = _square(kernel_size, "kernel_size")
        s = _square(stride if stride not in (None, []) else k, "stride")
        return self.op(
            "avg_pool2d",
            [x],
            {
                "kernel_size": k,
                "stride": s,
                "padding": _square(padding, "padding"),
                "count_include_pad": count_include_pad,
            },
        )

    def fn_adaptive_avg_pool2d(self, x: Any, output_size: Any) -> T:
        return self.op("adaptive_avg_pool2d", [x], {"output_size": _square(output_size, "output_size")})

    def loss(self, op: str, a: Any, b: Any, attrs: dict[str, Any], kw: dict[str, Any]) -> T:
        for k in ("size_average", "reduce"):
            if kw.pop(k, None) is not None:
                raise Refused(f"{op} with the deprecated {k}")
        if kw.pop("weight", None) is not None or kw.pop("pos_weight", None) is not None:
            raise Refused(f"{op} with class weights")
        if kw.pop("ignore_index", -100) != -100:
            raise Refused(f"{op} with ignore_index")
        if kw:
            raise Refused(f"{op} with {', '.join(kw)}")
        return self.op(op, [a, b], attrs)

    def fn_cross_entropy(
        self, a: Any, b: Any, *rest: Any, reduction: str = "mean", label_smoothing: float = 0.0, **kw: Any
    ) -> T:
        if rest:
            raise Refused("cross_entropy with positional arguments after the target")
        return self.loss("cross_entropy", a, b, {"reduction": reduction, "label_smoothing": float(label_smoothing)}, kw)

    def fn_nll_loss(self, a: Any, b: Any, *rest: Any, reduction: str = "mean", **kw: Any) -> T:
        return self.loss("nll_loss", a, b, {"reduction": reduction}, kw)

    def fn_mse_loss(self, a: Any, b: Any, *rest: Any, reduction: str = "mean", **kw: Any) -> T:
        return self.loss("mse_loss", a, b, {"reduction": reduction}, kw)

    def fn_smooth_l1_loss(self, a: Any, b: Any, *rest: Any, reduction: str = "mean", beta: float = 1.0, **kw: Any) -> T:
        return self.loss("smooth_l1_loss", a, b, {"reduction": reduction, "beta": float(beta)}, kw)

    def fn_huber_loss(self, a: Any, b: Any, *rest: Any, reduction: str = "mean", delta: float = 1.0, **kw: Any) -> T:
        return self.loss("huber_loss", a, b, {"reduction": reduction, "delta": float(delta)}, kw)


GHOST = "refused_value"


def _ghost(value: Any) -> Any:
    """A stand-in for a value that could not be ported: a `T` of its shape (tuples kept)."""
    if isinstance(value, (tuple, list)):
        return tuple(_ghost(v) for v in value)
    shape = getattr(value, "shape", None)
    if shape is not None:
        dtype = "float" if getattr(value, "is_floating_point", lambda: True)() else "int"
        return T(GHOST, tuple(shape), dtype)
    return value


@dataclass(frozen=True)
class _Max:
    """`x.max(dim)` before `.values` / `.indices` picks what it is."""

    kind: str
    x: Any
    dim: int
    keepdim: bool


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return _num(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def convert(
    traced: Traced,
    inputs: list[InputSpec],
    *,
    loss: str,
    classes: int | None,
    optimizer: str,
    steps: int,
) -> Conversion:
    """The program (one variant's source) and its data; refusals collected, not raised."""
    conv = Converter(traced, inputs)
    conv.run()
    out = conv.env.get(next(n.name for n in traced.graph.nodes if n.op == "output"))
    refusals = list(traced.refusals) + [r for r in conv.refusals if r.kind != "follows"]
    output = out if isinstance(out, T) else None
    lines: list[str] = list(conv.decls)
    loss_lines: list[str] = []
    if output is not None:
        loss_lines, extra_decls, problem = _loss(conv, output, loss, classes)
        lines += extra_decls
        if problem is not None:
            refusals.append(Refusal(None, "argument", problem))
    lines.append('losses = input(1, init="zeros")')
    for name in conv.frozen:
        lines.append(f"freeze({name})")
    lines.append(f"opt = {optimizer}")
    lines.append(f"for step in range({steps}):")
    where: dict[int, Line] = {}
    for line in conv.body:
        lines.append("    " + line.text)
        where[len(lines)] = line
    lines += ["    " + text for text in loss_lines]
    lines += [
        "    zero_grad(opt)",
        "    backward(loss)",
        "    step(opt)",
        "    losses = cat(losses, reshape(detach(loss), [1]))",
        "observe(losses)",
    ]
    for tensor in conv.params:
        lines.append(f"observe({tensor})")
    return Conversion(
        source="\n".join(lines) + "\n",
        arrays=conv.arrays,
        lines=where,
        modules={prog: qual for qual, prog in conv.modules.items()},
        params=conv.params,
        output=output,
        refusals=refusals,
        inputs=conv.input_names,
    )


def _loss(conv: Converter, out: T, loss: str, classes: int | None) -> tuple[list[str], list[str], str | None]:
    """The loss statements, the target's declaration, and a problem with `--loss` if any."""
    if loss == "output":
        if math.prod(out.shape) != 1:
            return [], [], f"--loss output: forward returns shape {list(out.shape)}, not a scalar loss"
        return [f"loss = mean({out.name})"], [], None
    target = conv.names.give("target")
    if loss in ("cross_entropy", "nll_loss"):
        if len(out.shape) != 2:
            return [], [], f"--loss {loss}: forward returns shape {list(out.shape)}; class scores [N, C] expected"
        n_classes = out.shape[1]
        if classes is not None and classes != n_classes:
            return [], [], f"--classes {classes}: forward returns {n_classes} class scores"
        decl = f'{target} = input({out.shape[0]}, dtype="int", high={n_classes})'
        return [f"loss = {loss}({out.name}, {target})"], [decl], None
    dims = ", ".join(map(str, out.shape)) if out.shape else "1"
    return [f"loss = {loss}({out.name}, {target})"], [f"{target} = input({dims})"], None
