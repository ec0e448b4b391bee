"""The cost of one training step in context: how many floating-point operations
a step does, and how many one core could do at most.

`step_mflop` counts a p10 step's operations from its shapes (batch B, d_in I,
d_out O); a multiply-add is two. With the EMA outside the loss (`detach`,
`without`, `log`):

    forward   x @ W + b                    2·B·I·O + B·O
    loss      mean(out²)                   2·B·O
    backward  dW = xᵀ @ g, db, g           2·B·I·O + 3·B·O    (x is a constant: no dx)
    SGD       W -= lr·dW, b -= lr·db       2·I·O + 2·O
    EMA       ema·k + snapshot·(1 - k)     3·I·O              (`log`: ‖snapshot‖, 2·I·O)

`target` and `target-without` add the target network's forward (x @ ema,
2·B·I·O) and its difference in the loss (B·O); `ema-only` is the EMA alone.
At 512x512, batch 64 that is 68.6 MFLOP for `detach`, of which the two
matrix products are 67.1. Program cases are counted by torch, not here
(`runner.program.flops`: the matrix products and convolutions of one iteration
of the timed loop, forward and backward; p10 as a program, `p10_program`, is
the 67.1), so `step_mflop` has no count for them (None).

`cpu_peak` is the nominal float32 peak of one core: its frequency times the
float32 lanes of its widest vector unit (16 with AVX-512, 8 with AVX/AVX2, 4
with SSE or NEON) times 2 with FMA times 2 pipes (two FMA units per core, as
on x86 cores since Haswell and Zen 2). An upper bound: no loop reaches it, and
a core whose AVX-512 is double-pumped (Zen 4) peaks at half of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import procinfo

FMA_PIPES = 2


def p10_step_flop(params: dict[str, Any], mode: str) -> float:
    """Floating-point operations of one p10 step of `mode` (module docstring)."""
    b, i, o = int(params["batch"]), int(params["d_in"]), int(params["d_out"])
    ema = 2 * i * o if mode == "log" else 3 * i * o
    if mode == "ema-only":
        return float(ema)
    forward = 2 * b * i * o + b * o
    loss = 2 * b * o
    if mode in ("target", "target-without"):
        loss += 2 * b * i * o + b * o
    backward = 2 * b * i * o + 3 * b * o
    sgd = 2 * i * o + 2 * o
    return float(forward + loss + backward + sgd + ema)


def step_mflop(kind: str, params: dict[str, Any], mode: str) -> float | None:
    """MFLOP of one step of a run, where the case kind has a count here (p10, with the parameters
    it needs; a program's count is torch's, `runner.program.flops`)."""
    if kind == "p10":
        try:
            return p10_step_flop(params, mode) / 1e6
        except (KeyError, TypeError, ValueError):
            return None
    return None


@dataclass(frozen=True)
class Peak:
    mhz: float
    lanes: int
    isa: str
    fma: bool
    pipes: int = FMA_PIPES

    @property
    def gflops(self) -> float:
        return self.mhz * 1e-3 * self.lanes * (2 if self.fma else 1) * self.pipes

    def basis(self) -> str:
        fma = "2 (FMA)" if self.fma else "1 (no FMA)"
        return f"{self.mhz:.0f} MHz x {self.lanes} float32 lanes ({self.isa}) x {fma} x {self.pipes} pipes"


def cpu_peak(root: Path = Path("/")) -> Peak | None:
    """The nominal float32 peak of one core (module docstring), from
    /proc/cpuinfo's flags and the core's highest frequency (cpufreq's
    `cpuinfo_max_freq` where the kernel exposes it, else `cpu MHz`)."""
    flag_lines = procinfo.cpuinfo("flags", root) or procinfo.cpuinfo("features", root)
    flags = set(flag_lines[0].split()) if flag_lines else set()
    mhz = next(iter(procinfo.cpufreq_mhz("cpuinfo_max_freq", root, cpus="cpu0")), None)
    if mhz is None:
        for value in procinfo.cpuinfo("cpu mhz", root):
            try:
                mhz = float(value)
                break
            except ValueError:
                continue
    if not mhz or not flags:
        return None
    if "avx512f" in flags:
        lanes, isa = 16, "avx512f"
    elif "avx2" in flags or "avx" in flags:
        lanes, isa = 8, "avx2" if "avx2" in flags else "avx"
    elif "asimd" in flags:
        return Peak(mhz=mhz, lanes=4, isa="asimd", fma=True)
    elif "sse" in flags:
        lanes, isa = 4, "sse"
    else:
        return None
    return Peak(mhz=mhz, lanes=lanes, isa=isa, fma="fma" in flags)
