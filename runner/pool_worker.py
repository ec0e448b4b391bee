"""A long-lived program worker: `python -m runner.pool_worker torch|burn`.

The worker of the program pool (`runner.fuzz.pool`, which the fuzzer, `port` and the report's
localization use): many programs per process. Reads one JSON request per line on stdin
(`{"id": n, "program": IR, "dtype": "float32"}`), runs the program with its framework's
interpreter, and writes one JSON line `{"id": n, "result": ...}` on the protocol stream. A
batch request (`{"id": n, "programs": [IR, ...]}`) runs them in one call (burn's
`run_programs`) and answers `{"id": n, "results": [...]}`. Anything else the process prints (a
framework's warnings) goes to stderr, never into the protocol. A crash or hang of the
interpreter ends the process: the pool names the program it was running and starts another
worker.

A torch worker is forked from the zygote (`runner.zygote`, which calls `main` in the child with
its stdin, stdout and stderr in place) when there is one, as torch's semantic runs are; a
fresh one runs this module.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

from .frameworks import adapter_for


def _runner(framework: str) -> Callable[[dict[str, Any], str], dict[str, Any]]:
    """The framework's program adapter (as `check` runs program cases), one program at a time."""
    adapter = importlib.import_module(adapter_for("program", framework).module)

    def run(program: dict[str, Any], dtype: str) -> dict[str, Any]:
        result: dict[str, Any] = adapter.run("generated", {"program": program, "dtype": dtype}, lambda c: None)
        return result

    return run


def _error(err: Exception) -> dict[str, Any]:
    return {
        "outcome": "error",
        "failure": {"message": f"{type(err).__name__}: {err}", "type": "worker", "op": None, "op_index": None},
        "traceback": traceback.format_exc(limit=-4),
    }


def _batch_runner(framework: str, run: Callable[[dict[str, Any], str], dict[str, Any]]) -> Callable[..., Any]:
    """Many programs in one call: burn's `run_programs` (each isolated in the probe), torch's
    interpreter one after the other; a program the interpreter refuses is that program's error."""
    if framework == "burn":
        probe = importlib.import_module("runner.adapters.burn_p10")._probe

        def many(programs: list[dict[str, Any]], dtype: str) -> list[dict[str, Any]]:
            try:
                results: list[dict[str, Any]] = probe.run_programs([json.dumps(p) for p in programs])
                return results
            except Exception:  # one refused program: each on its own, to say which
                return [one(p, dtype) for p in programs]

    else:

        def many(programs: list[dict[str, Any]], dtype: str) -> list[dict[str, Any]]:
            return [one(p, dtype) for p in programs]

    def one(program: dict[str, Any], dtype: str) -> dict[str, Any]:
        try:
            return run(program, dtype)
        except Exception as err:
            return _error(err)

    return many


def main(argv: list[str]) -> int:
    framework = argv[0]
    protocol = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # stray prints go to stderr
    run = _runner(framework)
    many = _batch_runner(framework, run)
    for line in sys.stdin:
        request = json.loads(line)
        dtype = request.get("dtype", "float32")
        if "programs" in request:
            protocol.write(json.dumps({"id": request["id"], "results": many(request["programs"], dtype)}) + "\n")
            continue
        try:
            result = run(request["program"], dtype)
        except Exception as err:  # the interpreter refused the program: a runner-level error
            result = _error(err)
        protocol.write(json.dumps({"id": request["id"], "result": result}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
