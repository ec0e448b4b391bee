#!/usr/bin/env python3
"""Measure what a reference model case's loss and weights tolerances are derived from.

For each pair of a program case that claims `same` or `differ` on `values:losses`, runs both
variants from the case's own sources for several seeds, in this process: torch
in float32 (as the case runs it) and in float64 (the rounding floor: how far
torch's own float32 curve is from a double-precision one), and burn (the probe).
Prints, per seed, the largest relative difference of a step's loss between the
two sides and the step it was reached at, the same for torch float32 against
float64, the first step beyond the case's tolerance, and the largest absolute
difference of every observation made after the loop (the final weights).

Then, per seed, every observation made inside the timed loop (a weight and its gradient at the
checkpoints, `observe(w, every_checkpoint=True)`, or at the loop's last step), matched by label
and checkpoint as the oracles match them: over the checkpoints, the largest absolute difference
between the two sides (and its step), that divided by the tensor's largest magnitude in either run
(`/max`: the abs a tolerance with `abs_scale = "tensor"` and rel 0 must have; its step), the
largest element-wise relative difference |a - b| / max(|a|, |b|) (near zero, as a gradient's
elements are, it says little), and torch float32 against float64 divided by the same largest
magnitude (the floor); the largest `/max` of the values and of the gradients over every
observation, with the floor's; and the first checkpoint beyond the case's weights tolerance
(`Tolerances.of`: `weights_tolerance`, `grads_tolerance`, else the loss tolerance), as the report
and the oracles compare them.

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
from runner.model.case import ObservedWhat, ProgramCase, Tolerances
from runner.program import torch_interp
from runner.program.data import materialize

LOSSES = "losses"


def _values(result: dict, label: str) -> np.ndarray | None:
    found = [o for o in result["observations"] if o["label"] == label and o["values"] is not None]
    return np.asarray(found[-1]["values"], dtype=np.float64) if found else None


def _rel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    scale = np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-30)
    return np.abs(a - b) / scale


Inside = dict[tuple[str, int], dict]


def _inside(result: dict) -> Inside:
    """The observations made inside the timed loop, by (label, iteration), the newest of each."""
    return {(o["label"], o["iteration"]): o for o in result["observations"] if o["iteration"] is not None}


def _array(obs: dict, what: ObservedWhat) -> np.ndarray | None:
    found = obs["values"] if what == "values" else obs["grad"]
    return None if found is None else np.asarray(found, dtype=np.float64)


def _first_apart(a: Inside, b: Inside, tolerances: Tolerances, per_iteration: int) -> str:
    """The first checkpoint at which an observation's values or gradient is beyond its tolerance."""
    for iteration in sorted({it for _, it in a}):
        for (label, it), oa in a.items():
            ob = b.get((label, it))
            if it != iteration or ob is None:
                continue
            for what in ("values", "grads"):
                va, vb = _array(oa, what), _array(ob, what)
                if va is None or vb is None:
                    if (va is None) != (vb is None):
                        return f"step {iteration * per_iteration} ({label} {what}, in one run only)"
                    continue
                tol = tolerances.of(what, iteration)
                absolute = tol.absolute(va.tolist(), vb.tolist())
                if not all(tol.close(float(x), float(y), absolute) for x, y in zip(va, vb, strict=True)):
                    return f"step {iteration * per_iteration} ({label} {what})"
    return "never"


def _checkpoints(t32: dict, t64: dict, burn: dict, per_iteration: int) -> tuple[list[str], dict[str, tuple]]:
    """Per label and values/grads, the lines described in the module's docstring, and the largest
    `/max` of the values and of the gradients: (value, label, step) and the floor's largest."""
    a, a64, b = _inside(t32), _inside(t64), _inside(burn)
    stats: dict[tuple[str, str], dict] = {}
    for (label, iteration), oa in a.items():
        if (label, iteration) not in b:
            continue
        for what in ("values", "grads"):
            va, vb = _array(oa, what), _array(b[(label, iteration)], what)
            v64 = _array(a64[(label, iteration)], what) if (label, iteration) in a64 else None
            if va is None or vb is None or va.shape != vb.shape:
                continue
            scale = float(np.max(np.maximum(np.abs(va), np.abs(vb)))) or 1.0
            diff = np.abs(va - vb)
            step = iteration * per_iteration
            s = stats.setdefault((label, what), {"abs": (0.0, 0), "max": (0.0, 0), "rel": 0.0, "floor": 0.0})
            if diff.max() > s["abs"][0]:
                s["abs"] = (float(diff.max()), step)
            if diff.max() / scale > s["max"][0]:
                s["max"] = (float(diff.max() / scale), step)
            s["rel"] = max(s["rel"], float(np.max(_rel(va, vb))))
            if v64 is not None and v64.shape == va.shape:
                s["floor"] = max(s["floor"], float(np.max(np.abs(va - v64)) / scale))
    lines, largest = [], {}
    for (label, what), s in stats.items():
        lines.append(
            f"      {label} {what}: abs {s['abs'][0]:.2g} (step {s['abs'][1]}), /max {s['max'][0]:.2g} "
            f"(step {s['max'][1]}), rel {s['rel']:.2g}; torch f32~f64 /max {s['floor']:.2g}"
        )
        best = largest.get(what, (0.0, "", 0, 0.0))
        value = best[:3] if s["max"][0] <= best[0] else (s["max"][0], label, s["max"][1])
        largest[what] = (*value, max(best[3], s["floor"]))
    return lines, largest


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
    tolerances = case.program.tolerances
    weights = {what: tolerances.inside(what).describe() for what in ("values", "grads")}
    for pair in case.pairs:
        if f"values:{LOSSES}" not in (*pair.same, *pair.differ):
            continue
        recipes = {ref.framework: case.programs[ref.mode] for ref in (pair.a, pair.b)}
        claim = "same" if f"values:{LOSSES}" in pair.same else "differ"
        print(f"{pair.a} ~ {pair.b}, claimed {claim} (tolerance abs {tol.abs:g}, rel {tol.rel:g})")
        print(f"  at the checkpoints: values {weights['values']}, grads {weights['grads']}")
        over_seeds: dict[str, list] = {}
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
            per_iteration = max((len(a) - 1) // case.steps, 1) if case.steps else 1
            lines, largest = _checkpoints(t32, t64, burn, per_iteration)
            if not lines:
                continue
            print("    inside the timed loop, over its checkpoints:")
            print("\n".join(lines))
            parts, floors = [], []
            for what, (value, label, step, floor) in largest.items():
                parts.append(f"{what} {value:.2g} ({label}, step {step})")
                floors.append(f"{what} {floor:.2g}")
                over_seeds.setdefault(what, []).append((value, floor))
            first = _first_apart(_inside(t32), _inside(burn), tolerances, per_iteration)
            print(
                f"    largest /max: {', '.join(parts)}; torch f32~f64: {', '.join(floors)}; "
                f"beyond the checkpoints' tolerance from: {first}"
            )
        if over_seeds:
            summary = "; ".join(
                f"{what} {', '.join(f'{v:.2g}' for v, _ in found)} (f32~f64 {', '.join(f'{f:.2g}' for _, f in found)})"
                for what, found in over_seeds.items()
            )
            print(f"  largest /max at the checkpoints, seeds {', '.join(map(str, args.seeds))}: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
