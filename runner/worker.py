"""One run in its own process: `python -m runner.worker SPEC RESULT PROGRESS_FD`.

SPEC is a JSON file (`kind`, `framework`, `mode`, `params`). The worker imports
the one adapter that implements it, runs it, and writes one JSON record to
RESULT atomically. Checkpoints are streamed as JSON lines to PROGRESS_FD while
the run goes on. An exception in the adapter becomes outcome "error"; a panic
inside burn comes back from the probe as outcome "panic". A crash or a hang
leaves no RESULT: the parent classifies it (see `runner.execute`).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from . import noise
from .atomic import write_json
from .frameworks import adapter_for


def main(argv: list[str]) -> int:
    spec_path, result_path, progress_fd = argv
    spec = json.loads(Path(spec_path).read_text())
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
        record.update(
            outcome="error",
            error={
                "type": type(err).__name__,
                "message": str(err),
                "traceback": traceback.format_exc(limit=-8),
            },
        )
    write_json(Path(result_path), record)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
