"""A p10 loop or a program case that steps when told:
`python3 benchmarks/stepper.py FRAMEWORK MODE WARMUP STEPS ROUNDS [CASE]`.

The benchmark's own process for one framework and mode (torch and burn never
share a process). It runs the loop through the runner's adapter with a
checkpoint after WARMUP steps and after every STEPS steps from there. At each
checkpoint it writes `ready STEP` on stdout and waits for a line on stdin:
`go` runs the next STEPS steps, anything else (or end of input) ends the
process. The parent times `go` -> `ready`: STEPS steady-state steps, plus a
pipe round trip of some tens of microseconds.

With CASE (a program case's name or file), MODE is its variant and a step is an
iteration of the program's timed loop, which runs WARMUP + STEPS x ROUNDS times
(`program` makes that program: the benchmark counts its FLOPs too).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from runner import noise
from runner.cases import load_case, resolve
from runner.frameworks import adapter_for
from runner.model.case import P10Params, ProgramCase
from runner.program.data import Recipe
from runner.program.ir import Program, Settings


class Stop(Exception):
    """The parent is done: leave the loop."""


def program(case_ref: str, mode: str, iterations: int, checkpoints: list[int]) -> Program:
    """The program case's variant `mode` with its timed loop run `iterations` times, a checkpoint
    at each of `checkpoints`, no RSS samples: the program both frameworks' steppers run."""
    case = load_case(resolve(case_ref), steps=iterations)
    assert isinstance(case, ProgramCase), f"{case_ref} is not a program case"
    recipe = case.programs[mode]
    settings = Settings(checkpoints=checkpoints, rss_every=0, track=recipe.settings.track)
    return Recipe(recipe.parsed, recipe.seed, settings).make()


def main(argv: list[str]) -> int:
    framework, mode, warmup, steps, rounds = argv[0], argv[1], int(argv[2]), int(argv[3]), int(argv[4])
    case_ref = argv[5] if len(argv) > 5 else None
    noise.pin_from_env()
    adapter = importlib.import_module(adapter_for("p10" if case_ref is None else "program", framework).module)
    total = warmup + steps * rounds
    points = [warmup + steps * i for i in range(rounds + 1)]
    if case_ref is None:
        params = P10Params().with_steps(total).model_dump()
        params["checkpoints"] = points
        params["rss_every"] = 0
    else:
        params = {"program": program(case_ref, mode, total, points).model_dump(mode="json")}

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
