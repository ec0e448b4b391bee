"""The p10 loop in PyTorch: CPU, one thread, seeded, the same sizes as burn's.

PyTorch has only `detach()`, which already gives a constant, so the modes are
`detach`, `target`, `log` and `ema-only`. `torch.nn.Linear` stores its weight
as [out, in], the transpose of burn's [in, out], hence `x @ ema.T` where burn
writes `x.matmul(ema)`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from ..frameworks import adapter_for
from ..procinfo import rss_bytes

MODES = adapter_for("p10", "torch").modes


def versions() -> dict[str, str]:
    return {"torch": torch.__version__}


def _flags(t: torch.Tensor) -> dict[str, Any]:
    return {
        "requires_grad": bool(t.requires_grad),
        "grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else None,
        "is_leaf": bool(t.is_leaf),
    }


def _busy_wait(seconds: float) -> None:
    """Spin (the core stays busy) for `seconds`: a known slowdown, for calibration only."""
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def run(mode: str, params: dict[str, Any], progress: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    if mode not in MODES:
        raise ValueError(f"mode: unknown torch p10 mode {mode!r}; valid: {', '.join(MODES)}")
    torch.set_num_threads(1)
    torch.manual_seed(params["seed"])
    steps, decay = params["steps"], params["ema_decay"]
    checkpoints = set(params["checkpoints"])
    rss_start = rss_bytes()

    model = torch.nn.Linear(params["d_in"], params["d_out"])
    x = torch.randn(params["batch"], params["d_in"])
    opt = torch.optim.SGD(model.parameters(), lr=params["lr"])
    ema = model.weight.detach()

    step_ms: list[float] = []
    records: list[dict[str, Any]] = []
    rss_samples: list[list[float]] = []
    rss_every = params.get("rss_every", 0)
    busy_wait_s = params.get("busy_wait_us", 0) / 1e6  # calibration only, as the probe's
    segment_start = 0
    for step in range(1, steps + 1):
        started = time.perf_counter()
        if mode != "ema-only":
            out = model(x)
            if mode == "target":
                loss = (out - x @ ema.T).pow(2).mean()
            else:
                loss = out.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if mode == "log":
            # A snapshot that is read and dropped, never kept.
            model.weight.detach().pow(2).sum().sqrt().item()
        else:
            ema = ema * decay + model.weight.detach() * (1.0 - decay)
        if busy_wait_s:
            _busy_wait(busy_wait_s)
        step_ms.append((time.perf_counter() - started) * 1e3)

        if rss_every and step % rss_every == 0 and rss_start is not None:
            now = rss_bytes()
            if now is not None:
                rss_samples.append([step, (now - rss_start) / 2**20])

        if step in checkpoints:
            segment = step_ms[segment_start:]
            segment_start = len(step_ms)
            kept = model.weight.detach() if mode == "log" else ema
            flags = _flags(kept)
            rss = rss_bytes()
            record = {
                "step": step,
                "ms_per_step": sum(segment) / len(segment),
                "rss_bytes": rss,
                "rss_delta_mib": (rss - rss_start) / 2**20 if rss is not None and rss_start is not None else None,
                "tracked": flags["requires_grad"] or flags["grad_fn"] is not None,
                "flags": flags,
            }
            records.append(record)
            progress(record)
    return {"outcome": "ok", "panic": None, "step_ms": step_ms, "checkpoints": records, "rss_samples": rss_samples}
