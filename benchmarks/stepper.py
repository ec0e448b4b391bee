"""A p10 loop that steps when told: `python3 benchmarks/stepper.py FRAMEWORK MODE WARMUP STEPS ROUNDS`.

The benchmark's own process for one framework and mode (torch and burn never
share a process). It runs the loop through the runner's adapter with a
checkpoint after WARMUP steps and after every STEPS steps from there. At each
checkpoint it writes `ready STEP` on stdout and waits for a line on stdin:
`go` runs the next STEPS steps, anything else (or end of input) ends the
process. The parent times `go` -> `ready`: STEPS steady-state steps, plus a
pipe round trip of some tens of microseconds.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from runner import noise
from runner.frameworks import adapter_for
from runner.model.case import P10Params


class Stop(Exception):
    """The parent is done: leave the loop."""


def main(argv: list[str]) -> int:
    framework, mode, warmup, steps, rounds = argv[0], argv[1], int(argv[2]), int(argv[3]), int(argv[4])
    noise.pin_from_env()
    adapter = importlib.import_module(adapter_for("p10", framework).module)
    total = warmup + steps * rounds
    points = [warmup + steps * i for i in range(rounds + 1)]
    params = P10Params().with_steps(total).model_dump()
    params["checkpoints"] = points
    params["rss_every"] = 0

    def at_checkpoint(checkpoint: dict[str, Any]) -> None:
        print(f"ready {checkpoint['step']}", flush=True)
        if sys.stdin.readline().strip() != "go":
            raise Stop

    try:
        adapter.run(mode, params, at_checkpoint)
    except Stop:
        pass
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
