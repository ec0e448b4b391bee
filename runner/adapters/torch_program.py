"""Program cases in PyTorch: the torch interpreter (`runner.program.torch_interp`) on the CPU, one thread.

`count_flop` is the worker's other task (`runner.worker`): the floating-point operations of one
iteration of each program's timed loop (`runner.program.flops`), for both frameworks' runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..program import flops, torch_interp
from ..program.data import Recipe


def versions() -> dict[str, str]:
    return {"torch": torch.__version__}


def run(mode: str, params: dict[str, Any], progress: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    torch.set_num_threads(1)
    # float64: the fuzzer's reference run (`params["dtype"]`); cases run in float32
    dtype = torch.float64 if params.get("dtype") == "float64" else torch.float32
    return torch_interp.run(params["program"], progress=progress, dtype=dtype)


def count_flop(recipes: dict[str, Any]) -> dict[str, int | None]:
    """Key -> FLOPs of one iteration of the timed loop of the program that `Recipe.dump` data
    makes (None: no count: no timed loop, or torch does not get through its first iteration).
    One program at a time: each one's data is made, counted and let go before the next."""
    torch.set_num_threads(1)
    counts: dict[str, int | None] = {}
    for key, data in recipes.items():
        try:
            program = Recipe.load(data).make()
        except Exception:  # not a recipe this runner made: no count rather than no run
            counts[key] = None
            continue
        counts[key] = flops.step_flop(program)
        del program
    return counts
