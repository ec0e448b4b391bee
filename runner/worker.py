"""One run in its own process: `python -m runner.worker SPEC RESULT PROGRESS_FD`.

SPEC is a JSON file (`kind`, `framework`, `mode`, `params`, `memory_mib`). The
worker imports the one adapter that implements it, runs it, and writes one
JSON record to RESULT atomically. Checkpoints are streamed as JSON lines to
PROGRESS_FD while the run goes on. An exception in the adapter becomes outcome
"error"; one that says an allocation failed (MemoryError, torch's allocator,
a library that cannot be mapped under the memory limit) becomes "oom"; a panic
inside burn comes back from the probe as outcome "panic". A crash or a hang
leaves no RESULT: the parent classifies it (see `runner.execute`).

With `task` = `count_flop` in SPEC (and `programs`, key -> a program's recipe, in place of
`mode` and `params`), the worker counts instead of running: the torch adapter's `count_flop`
(the floating-point operations of one iteration of each program's timed loop) goes to RESULT
as `{"counts": {key: FLOPs or null}}`; nothing is timed, and PROGRESS_FD gets nothing.

The parent has already capped this process's address space and tied its life
to the parent's (`runner.limits.child_setup`). The parent is the runner, or, for
torch's semantic runs, the zygote that forked this process from one that had
imported torch already and calls `main` in it (`runner.zygote`).
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import sys
import traceback
from pathlib import Path
from typing import Any

from . import noise
from .atomic import write_json
from .frameworks import adapter_for
from .limits import looks_out_of_memory, vm_peak
from .model.nonfinite import spell_values


def _peak_mib() -> float | None:
    peak = vm_peak(os.getpid())
    if peak is None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return round(peak / (1 << 20), 1)


def _spell_observations(record: dict[str, Any]) -> None:
    """An observed NaN or infinity (a variance over one element) in the words the results
    file uses for them: JSON has none, and the record is written without them."""
    for observation in record.get("observations") or []:
        for key in ("values", "grad"):
            observation[key] = spell_values(observation.get(key))


def count_flop(spec: dict[str, Any], result_path: Path) -> int:
    """The `count_flop` task: every program's count, written to RESULT."""
    adapter = importlib.import_module(adapter_for("program", "torch").module)
    write_json(result_path, {"counts": adapter.count_flop(spec["programs"])})
    return 0


def main(argv: list[str]) -> int:
    spec_path, result_path, progress_fd = argv
    spec = json.loads(Path(spec_path).read_text())
    if spec.get("task") == "count_flop":
        return count_flop(spec, Path(result_path))
    progress = os.fdopen(int(progress_fd), "w", buffering=1, encoding="utf-8")

    def on_checkpoint(checkpoint: dict[str, Any]) -> None:
        try:
            progress.write(json.dumps({"event": "checkpoint", **checkpoint}) + "\n")
        except (BrokenPipeError, ValueError):
            pass  # the parent stopped listening; the run itself goes on

    # Pinned before anything is imported or timed (the CPU the parent named, if any).
    record: dict[str, Any] = {"versions": {}, "conditions": {"cpu": noise.pin_from_env()}}
    try:
        adapter = importlib.import_module(adapter_for(spec["kind"], spec["framework"]).module)
        record["versions"] = adapter.versions()
        record.update(adapter.run(spec["mode"], spec["params"], on_checkpoint))
    except Exception as err:  # an error of the run, recorded as its outcome
        message = f"{type(err).__name__}: {err}"
        if isinstance(err, MemoryError) or looks_out_of_memory(message):
            record.update(
                outcome="oom",
                oom={
                    "limit_mib": spec.get("memory_mib"),
                    "peak_mib": _peak_mib(),
                    "detail": message[:2000],
                    "stderr_tail": traceback.format_exc(limit=-4)[-4000:],
                },
            )
        else:
            record.update(
                outcome="error",
                error={
                    "type": type(err).__name__,
                    "message": str(err),
                    "traceback": traceback.format_exc(limit=-8),
                },
            )
    _spell_observations(record)
    write_json(Path(result_path), record)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
