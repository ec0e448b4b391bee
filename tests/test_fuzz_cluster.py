"""Campaigns in several shards: local jobs (processes of their own) and a real Dask cluster on
the loopback interface find the same root causes as one process with the same seed and
programs; without `--cluster` nothing of Dask is imported or started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.fuzz.campaign import ShardSpec
from runner.fuzz.jobs import Coordinator, run_local
from runner.fuzz.known import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
SPEC = ShardSpec(seed=11, max_programs=48, budget_s=3600)
TIMED = {f"known:{k.id}" for k in REGISTRY if k.timed}


def _campaign(run) -> tuple[tuple[set[str], dict[str, int], int], int, Coordinator]:
    """What a campaign judged: its root causes, its divergences by kind (new, and known by the
    difference that explains them) and how many programs were fully judged; its program count."""
    coordinator = Coordinator()
    run(coordinator)
    stats = coordinator.stats()
    # A known difference judged from step times (a growth) comes and goes with the machine's load
    # (seen here under a loaded suite: `kept-graph-grows` in one campaign, not in the other): the
    # campaigns must agree on everything else.
    untimed = {k: n for k, n in stats.divergences.items() if k not in TIMED}
    return (set(coordinator.causes), untimed, stats.fully_judged), stats.programs, coordinator


@pytest.fixture(scope="module")
def one_process():
    return _campaign(lambda c: run_local(SPEC, 1, c, lambda s: None))


@pytest.mark.slow
def test_local_jobs_find_the_same_root_causes_as_one_process(one_process):
    judged, programs, _ = one_process
    # Every root cause of the real burn is judged (known) by now, so the comparison is of what the
    # programs showed: it must not be empty.
    assert programs == SPEC.max_programs and sum(judged[1].values()) > 0, "the seed's programs show divergences"
    sharded, sharded_programs, coordinator = _campaign(lambda c: run_local(SPEC, 2, c, lambda s: None))
    assert sharded_programs == programs and not coordinator.failures
    assert sharded == judged


@pytest.fixture
def dask_cluster(tmp_path):
    """A real Dask cluster on the loopback interface, as `dask scheduler` and `dask worker` run
    on machines: a scheduler and two single-thread workers, each in a process group of its own
    (stopped, with everything they started, at the end)."""
    pytest.importorskip("distributed")
    file = tmp_path / "scheduler.json"
    common = {"cwd": ROOT, "start_new_session": True, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(file),
            ],
            **common,
        )
    ]
    try:
        deadline = time.monotonic() + 60
        while not file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(file.read_text())["address"]
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_worker",
                    address,
                    "--host",
                    "127.0.0.1",
                    "--nworkers",
                    "2",
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                ],
                **common,
            )
        )
        yield address
    finally:
        for proc in reversed(procs):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


@pytest.mark.slow
def test_a_sharded_campaign_on_a_local_dask_cluster_finds_the_same_root_causes(one_process, dask_cluster):
    from distributed import Client

    from runner.fuzz.cluster import run_cluster

    assert dask_cluster.startswith("tcp://127.0.0.1:")
    with Client(dask_cluster) as client:  # both workers up before the campaign counts them
        client.wait_for_workers(2, timeout=120)
    judged, programs, _ = one_process
    shards: list[int] = []
    sharded, sharded_programs, coordinator = _campaign(
        lambda c: shards.append(run_cluster(dask_cluster, SPEC, c, lambda s: None))
    )
    assert shards == [2] and not coordinator.failures
    assert sharded_programs == programs
    assert sharded == judged


def test_without_cluster_nothing_of_dask_is_imported():
    code = "import sys, runner.cli, runner.fuzz.command, runner.fuzz.jobs; print('distributed' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
