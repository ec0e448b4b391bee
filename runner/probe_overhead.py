"""What driving the burn loop from Python costs: `python3 -m runner.probe_overhead`.

For each p10 mode, runs the native `p10` binary and the same loop through the
Python module (in a runner worker, as `check` does), interleaved, and compares
the median per-step time over the steady-state window (after warm-up). Both
call the one `rust_probe::p10::run`, so the ratio should sit near 1.

`--malloc fixed` (the default) gives both processes the same glibc malloc
settings (MALLOC_MMAP_THRESHOLD_=64 MiB, MALLOC_TRIM_THRESHOLD_=128 MiB). With
glibc's defaults the threshold adapts to the process's allocation history, so
burn's 1 MiB tensors are served by mmap (page faults, zeroing) in some
processes and from the heap in others: per-step times of the same binary
differ up to ~2x between runs, which swamps what Python costs. `--malloc
default` measures that as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from .errors import ExitCode
from .execute import RunRequest, execute
from .frameworks import adapter_for
from .metrics import relative_spread
from .model.case import P10Params
from .noise import FIXED_MALLOC, Controls
from .paths import PROJECT_ROOT, target_dir

MODES = adapter_for("p10", "burn").modes


def build_native() -> Path:
    env = {**os.environ, "CARGO_TARGET_DIR": str(target_dir())}
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "rust_probe", "--bin", "p10"], cwd=PROJECT_ROOT, env=env, check=True
    )
    return target_dir() / "release" / "p10"


def native(binary: Path, mode: str, steps: int, env: dict[str, str]) -> list[float]:
    out = subprocess.run(
        [str(binary), mode, str(steps), "--json"], capture_output=True, text=True, env={**os.environ, **env}
    )
    step_ms: list[float] = json.loads(out.stdout)["step_ms"]
    return step_ms


def python_driven(mode: str, steps: int, env: dict[str, str]) -> list[float]:
    params = P10Params().with_steps(steps).model_dump()
    # The malloc settings are the ones given here (`--malloc`), as for the native side.
    record = execute(
        RunRequest("overhead", "p10", "burn", mode, params, 3600, env, controls=Controls(malloc=False, pin=False))
    )
    return record.step_ms


def steady_median(step_ms: list[float], warmup: int) -> float | None:
    window = step_ms[warmup:]
    return statistics.median(window) if window else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m runner.probe_overhead", description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved native/python runs per mode")
    parser.add_argument("--mode", action="append", choices=MODES)
    parser.add_argument(
        "--malloc",
        choices=("fixed", "default"),
        default="fixed",
        help="glibc malloc settings for both processes (see the module docstring)",
    )
    args = parser.parse_args(argv)
    env = FIXED_MALLOC if args.malloc == "fixed" else {}
    binary = build_native()
    print(f"malloc: {args.malloc} {env or ''}")
    print(f"per-step median after step {args.warmup}, {args.steps} steps, {args.repeats} interleaved runs each;")
    print("'spread' is (max - min) / median of one side's run medians: the noise floor of the comparison")
    print(
        f"{'mode':15} {'native ms':>10} {'python ms':>10} {'python/native':>14} {'native spread':>14} {'python spread':>14}"
    )
    for mode in args.mode or MODES:
        nat: list[float | None] = []
        py: list[float | None] = []
        for _ in range(args.repeats):
            nat.append(steady_median(native(binary, mode, args.steps, env), args.warmup))
            py.append(steady_median(python_driven(mode, args.steps, env), args.warmup))
            print(f"  {mode}: native {nat[-1]}, python {py[-1]}", file=sys.stderr, flush=True)
        nat_ok, py_ok = [v for v in nat if v is not None], [v for v in py if v is not None]
        if len(nat_ok) < len(nat) or len(py_ok) < len(py):
            print(f"{mode:15} {'-':>10} {'-':>10} {'-':>14}  (ends before step {args.warmup + 1})")
            continue
        n, p = statistics.median(nat_ok), statistics.median(py_ok)
        print(
            f"{mode:15} {n:10.3f} {p:10.3f} {p / n:14.3f} {relative_spread(nat_ok):14.1%} {relative_spread(py_ok):14.1%}"
        )
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
