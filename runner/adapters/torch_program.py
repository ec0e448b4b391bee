"""Program cases in PyTorch: the torch interpreter (`runner.program.torch_interp`) on the CPU, one thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..program import torch_interp


def versions() -> dict[str, str]:
    return {"torch": torch.__version__}


def run(mode: str, params: dict[str, Any], progress: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    torch.set_num_threads(1)
    # float64: the fuzzer's reference run (`params["dtype"]`); cases run in float32
    dtype = torch.float64 if params.get("dtype") == "float64" else torch.float32
    return torch_interp.run(params["program"], progress=progress, dtype=dtype)
