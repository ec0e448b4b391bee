#!/usr/bin/env python3
"""Measure what a reference model case's loss tolerance is derived from.

For each pair of a program case that claims `same` or `differ` on `values:losses`, runs both
variants from the case's own sources for several seeds, in this process: torch
in float32 (as the case runs it) and in float64 (the rounding floor: how far
torch's own float32 curve is from a double-precision one), and burn (the probe).
Prints, per seed, the largest relative difference of a step's loss between the
two sides and the step it was reached at, the same for torch float32 against
float64, the first step beyond the case's tolerance, and the largest absolute
difference of every observation made after the loop (the final weights).

Usage: python3 scripts/model_tolerance.py cases/model_mlp.toml [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runner import _probe
from runner.cases import load_case
from runner.model.case import ProgramCase
from runner.program import torch_interp
from runner.program.data import materialize

LOSSES = "losses"


def _values(result: dict, label: str) -> np.ndarray | None:
    found = [o for o in result["observations"] if o["label"] == label and o["values"] is not None]
    return np.asarray(found[-1]["values"], dtype=np.float64) if found else None


def _rel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    scale = np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-30)
    return np.abs(a - b) / scale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case", type=Path)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    case = load_case(args.case)
    if not isinstance(case, ProgramCase):
        print(f"{args.case}: not a program case", file=sys.stderr)
        return 2
    tol = case.program.tolerance
    for pair in case.pairs:
        if f"values:{LOSSES}" not in (*pair.same, *pair.differ):
            continue
        recipes = {ref.framework: case.programs[ref.mode] for ref in (pair.a, pair.b)}
        claim = "same" if f"values:{LOSSES}" in pair.same else "differ"
        print(f"{pair.a} ~ {pair.b}, claimed {claim} (tolerance abs {tol.abs:g}, rel {tol.rel:g})")
        for seed in args.seeds:
            torch_program = materialize(recipes["torch"].parsed, seed, recipes["torch"].settings)
            burn_program = materialize(recipes["burn"].parsed, seed, recipes["burn"].settings)
            t32 = torch_interp.run(torch_program)
            t64 = torch_interp.run(torch_program, dtype=torch.float64)
            burn = _probe.run_program(burn_program.model_dump_json())
            if "ok" != t32["outcome"] or "ok" != burn["outcome"]:
                print(f"  seed {seed}: torch {t32['outcome']}, burn {burn['outcome']}")
                continue
            a, a64, b = (_values(r, LOSSES) for r in (t32, t64, burn))
            assert a is not None and a64 is not None and b is not None
            rel, floor = _rel(a, b), _rel(a, a64)
            beyond = np.nonzero(np.abs(a - b) > tol.abs + tol.rel * np.maximum(np.abs(a), np.abs(b)))[0]
            first = str(beyond[0]) if beyond.size else "never"
            finals = []
            for obs in t32["observations"]:
                if obs["iteration"] is None and obs["label"] != LOSSES and obs["values"] is not None:
                    other = _values(burn, obs["label"])
                    if other is not None:
                        diff = np.abs(np.asarray(obs["values"], dtype=np.float64) - other)
                        finals.append(f"{obs['label']} {diff.max():.2g}")
            print(
                f"  seed {seed}: loss max rel {rel.max():.2g} (step {rel.argmax()}), "
                f"torch f32~f64 {floor.max():.2g}; beyond the tolerance from step {first}; "
                f"final loss {a[-1]:.4g}; final max abs: {', '.join(finals)}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
