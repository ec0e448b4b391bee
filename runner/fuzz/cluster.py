"""A campaign across machines, on Dask (`fuzz --cluster ADDRESS`).

Dask rather than Ray: a shard is one plain function call that runs for the budget and
returns its counts and causes, which is what `Client.submit` does with nothing else
installed (Ray brings a runtime, an object store and a dashboard per node); Dask's
scheduler and workers are two commands on ordinary machines, and the same code runs in a
local cluster for the test. Each of the cluster's worker threads runs one shard (its seed
shard number, of as many shards as there are threads); the shards start their own torch
and burn workers on their machine (`pool`), and the results come back here to be merged
and deduplicated by root cause (`jobs.Coordinator`). Without `--cluster` none of this is
imported, and nothing but the local jobs starts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .campaign import ShardSpec, Stats, cause_from_dict, cause_to_dict, run_shard
from .jobs import Coordinator


def shard_task(spec_json: str) -> dict[str, Any]:
    """What a cluster worker runs: one shard, its counts and causes as plain data."""
    stats, causes = run_shard(ShardSpec.from_json(spec_json))
    return {"stats": stats.to_dict(), "causes": [cause_to_dict(c) for c in causes]}


def run_cluster(address: str, spec: ShardSpec, coordinator: Coordinator, on_progress: Callable[[Stats], None]) -> int:
    """Shard the campaign over the cluster at `address`; the number of shards run."""
    from distributed import Client, as_completed

    with Client(address, timeout="30s") as client:  # type: ignore[no-untyped-call]
        threads = int(sum(client.nthreads().values()))
        if threads < 1:
            raise RuntimeError(f"the cluster at {address} has no workers")
        futures = [
            client.submit(
                shard_task,
                replace(spec, shard=i, shards=threads).to_json(),
                pure=False,
                key=f"fuzz-shard-{spec.seed}-{i}-of-{threads}",
            )
            for i in range(threads)
        ]
        index = {f.key: i for i, f in enumerate(futures)}
        try:
            for future in as_completed(futures):  # type: ignore[no-untyped-call]
                shard = index[future.key]
                try:
                    result = future.result()
                except Exception as err:  # a shard that failed on its machine: said, not fatal
                    coordinator.failures.append(f"shard {shard}: {type(err).__name__}: {err}")
                    continue
                coordinator.progress(shard, Stats.from_dict(result["stats"]))
                for data in result["causes"]:
                    coordinator.cause(cause_from_dict(data))
                on_progress(coordinator.stats())
        finally:
            client.cancel(futures)
    return threads
