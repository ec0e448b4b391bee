"""Layers and activations: convolution, pooling, normalization, embedding, dropout, attention,
GELU, SiLU, LeakyReLU, softmax.

Each module kind is declared (`conv = Conv2d(3, 8, 3, padding=1)`) with torch's parameter names,
and called (`conv(x)`); what the program omits is omitted on both sides, so each framework
applies its own default (the `torch_default` / `burn_default` columns say which, and a test
reads them from the frameworks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from .. import limits
from .spec import OMITTED, AttrSpec, AttrValue, ModuleSpec, OpSpec, ParamSpec, int_attr


def _conv_fan_in(attrs: Mapping[str, AttrValue]) -> int:
    groups = int_attr(attrs, "groups") if "groups" in attrs else 1
    kernel = int_attr(attrs, "kernel_size")
    return int_attr(attrs, "in_channels") // groups * kernel * kernel


def _conv2d_weight(attrs: Mapping[str, AttrValue]) -> list[int]:
    groups = int_attr(attrs, "groups") if "groups" in attrs else 1
    kernel = int_attr(attrs, "kernel_size")
    return [int_attr(attrs, "out_channels"), int_attr(attrs, "in_channels") // groups, kernel, kernel]


_CONV_ATTRS = (
    AttrSpec("in_channels", "int", positional=True, minimum=1, maximum=limits.MAX_DIM, doc="input channels"),
    AttrSpec("out_channels", "int", positional=True, minimum=1, maximum=limits.MAX_DIM, doc="output channels"),
    AttrSpec("kernel_size", "int", positional=True, minimum=1, maximum=64, doc="the square kernel's side"),
    AttrSpec("stride", "int", OMITTED, minimum=1, maximum=64, torch_default=1, burn_default=1),
    AttrSpec(
        "padding", "int", OMITTED, minimum=0, maximum=64, torch_default=0, burn_default=0, doc="zeros on each side"
    ),
    AttrSpec("dilation", "int", OMITTED, minimum=1, maximum=64, torch_default=1, burn_default=1),
    AttrSpec("groups", "int", OMITTED, minimum=1, maximum=limits.MAX_DIM, torch_default=1, burn_default=1),
    AttrSpec("bias", "bool", OMITTED, torch_default=True, burn_default=True),
)

MODULES: Final[tuple[ModuleSpec, ...]] = (
    ModuleSpec(
        "conv2d",
        "Conv2d",
        "`torch.nn.Conv2d(in, out, k, stride=, padding=, dilation=, groups=, bias=)`: weight `[out, in/groups, k, k]`",
        "`Conv2dConfig::new([in, out], [k, k])` `.with_stride([s, s])` `.with_padding(PaddingConfig2d::Explicit(p, p))` "
        "`.with_dilation([d, d])` `.with_groups(g)` `.with_bias(b)`, each only when given; weight `[out, in/groups, k, k]` "
        "as torch's",
        attrs=_CONV_ATTRS,
        params=(
            ParamSpec("weight", "[out, in/groups, k, k]", _conv2d_weight, "fan_in"),
            ParamSpec("bias", "[out]", lambda a: [int_attr(a, "out_channels")], "fan_in", when="bias"),
        ),
        call="conv2d",
        torch_class="torch.nn.Conv2d",
        fan_in=_conv_fan_in,
    ),
)

SPECS: Final[tuple[OpSpec, ...]] = (
    OpSpec(
        "conv2d",
        "layer",
        ("module", "tensor"),
        "tensor",
        "`conv(x)`",
        "`conv(x)` (x `[N, C, H, W]`)",
        "`conv.forward(x)`",
        "applies a Conv2d module",
        differentiable=True,
        family="layers",
        module="conv2d",
    ),
    OpSpec(
        "gelu",
        "layer",
        ("tensor",),
        "tensor",
        "`gelu(T, approximate=)`",
        "`torch.nn.functional.gelu(t, approximate=...)` (default `'none'`: exact)",
        "`activation::gelu(t)` (exact); `approximate='tanh'`: `activation::gelu_approximate(t)`",
        "GELU, exact or with the tanh approximation",
        attrs=(
            AttrSpec(
                "approximate",
                "str",
                OMITTED,
                choices=("none", "tanh"),
                enum="GeluApproximate",
                torch_default="none",
                doc="the tanh approximation or the exact erf form",
            ),
        ),
        differentiable=True,
        family="layers",
        torch_call="torch.nn.functional.gelu",
    ),
)
