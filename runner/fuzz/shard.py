"""A shard of a campaign in a process of its own: `python -m runner.fuzz.shard`.

Reads its `ShardSpec` (one JSON line) on stdin and writes JSON lines on the protocol
stream: `{"event": "cause", "cause": ...}` for each root cause as it is found,
`{"event": "progress", "stats": ...}` every few seconds, and `{"event": "done", "stats":
...}` at the end. Its torch and burn workers are its own children (`pool`), started,
capped and tied to its life as every worker is (`runner.workers`): when the
coordinator kills it, they go with it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from .campaign import ShardSpec, Stats, cause_to_dict, run_shard
from .localize import Cause


def main() -> int:
    protocol = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # stray prints go to stderr

    def send(event: dict[str, Any]) -> None:
        protocol.write(json.dumps(event) + "\n")

    spec = ShardSpec.from_json(sys.stdin.readline())

    def on_cause(cause: Cause) -> None:
        send({"event": "cause", "cause": cause_to_dict(cause)})

    def on_progress(stats: Stats) -> None:
        send({"event": "progress", "stats": stats.to_dict()})

    stats, _ = run_shard(spec, on_cause=on_cause, on_progress=on_progress)
    send({"event": "done", "stats": stats.to_dict()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
