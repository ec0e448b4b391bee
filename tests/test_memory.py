"""The per-run memory limit (RLIMIT_AS, `execution.memory_mib`) and outcome
`oom`; and what else the worker gets between fork and exec (it dies with its
parent). Stand-in workers for the detection; real torch and burn runs, too
large for their limit, in the slow tests."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap

import pytest

from runner import limits
from runner.errors import BadInput
from runner.execute import RunRequest, execute

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def request(memory_mib: int | None = 256, timeout_s: float = 60) -> RunRequest:
    return RunRequest("fake", "p10", "burn", "detach", {"steps": 10}, timeout_s=timeout_s, memory_mib=memory_mib)


def stand_in(tmp_path, body: str) -> list[str]:
    script = tmp_path / "worker.py"
    script.write_text(
        "import ctypes, json, os, resource, signal, sys\n"
        "spec_path, result_path, progress_fd = sys.argv[1:]\n" + textwrap.dedent(body)
    )
    return [sys.executable, str(script)]


def test_the_worker_runs_under_the_limit_and_dies_with_its_parent(tmp_path):
    worker = stand_in(
        tmp_path,
        """
        libc = ctypes.CDLL(None)
        signal_number = ctypes.c_int()
        libc.prctl(2, ctypes.byref(signal_number), 0, 0, 0)  # PR_GET_PDEATHSIG
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        json.dump({"outcome": "ok", "versions": {"limit": str(limit), "pdeathsig": str(signal_number.value)}},
                  open(result_path, "w"))
        """,
    )
    record = execute(request(memory_mib=300), worker=worker)
    assert record.outcome == "ok" and record.memory_mib == 300
    assert record.versions == {"limit": str(300 << 20), "pdeathsig": "9"}


def test_a_memory_error_is_oom(tmp_path):
    record = execute(request(), worker=stand_in(tmp_path, "block = bytearray(1 << 30)"))
    assert record.outcome == "oom" and record.oom is not None
    assert record.oom.limit_mib == 256 and "MemoryError" in record.oom.detail


def test_a_rust_allocation_failure_is_oom(tmp_path):
    worker = stand_in(
        tmp_path,
        """
        sys.stderr.write("memory allocation of 268435456 bytes failed\\n"); sys.stderr.flush()
        os.abort()
        """,
    )
    record = execute(request(), worker=worker)
    assert record.outcome == "oom"
    assert record.oom.detail == "memory allocation of 268435456 bytes failed"


def test_a_kill_at_the_limit_is_oom_and_one_below_it_a_crash(tmp_path):
    touch = """
        size = int(os.environ.get("SIZE_MIB", "0")) << 20
        block = bytearray(size)
        block[::4096] = b"x" * len(block[::4096])
        import time; time.sleep(0.6)  # long enough for the parent to see the peak
        os.kill(os.getpid(), signal.SIGKILL)
    """
    worker = stand_in(tmp_path, touch)
    at_limit = RunRequest("f", "p10", "burn", "detach", {}, 60, env={"SIZE_MIB": "470"}, memory_mib=512)
    record = execute(at_limit, worker=worker)
    assert record.outcome == "oom" and "SIGKILL" in record.oom.detail
    assert record.oom.peak_mib is not None and record.oom.peak_mib >= 0.9 * 512
    below = RunRequest("f", "p10", "burn", "detach", {}, 60, env={"SIZE_MIB": "20"}, memory_mib=1024)
    record = execute(below, worker=worker)
    assert record.outcome == "crash" and record.crash.signal == "SIGKILL"


@pytest.mark.parametrize(
    "raised, outcome",
    [
        ('RuntimeError("[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can\'t allocate memory")', "oom"),
        ('ImportError("libtorch_cpu.so: failed to map segment from shared object")', "oom"),
        ("MemoryError()", "oom"),
        ('ValueError("steps: must be a positive integer")', "error"),
    ],
)
def test_the_worker_calls_an_adapters_allocation_failure_oom(tmp_path, monkeypatch, raised, outcome):
    from runner import worker

    monkeypatch.delitem(sys.modules, "fake_adapter", raising=False)
    (tmp_path / "fake_adapter.py").write_text(
        f"def versions():\n    return {{}}\n\ndef run(mode, params, progress):\n    raise {raised}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(worker, "adapter_for", lambda kind, framework: type("A", (), {"module": "fake_adapter"}))
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"kind": "p10", "framework": "burn", "mode": "detach", "params": {}, "memory_mib": 99}))
    read_fd, write_fd = os.pipe()
    worker.main([str(spec), str(tmp_path / "result.json"), str(write_fd)])
    os.close(read_fd)
    record = json.loads((tmp_path / "result.json").read_text())
    assert record["outcome"] == outcome
    if outcome == "oom":
        assert record["oom"]["limit_mib"] == 99 and record["oom"]["detail"].split(":")[0] == raised.split("(")[0]


def test_no_limit_when_none_is_asked(tmp_path):
    worker = stand_in(
        tmp_path,
        """
        json.dump({"outcome": "ok", "versions": {"limit": str(resource.getrlimit(resource.RLIMIT_AS)[0])}},
                  open(result_path, "w"))
        """,
    )
    record = execute(request(memory_mib=None), worker=worker)
    assert record.versions["limit"] == str(resource.getrlimit(resource.RLIMIT_AS)[0])


@pytest.mark.parametrize("value", [0, 63, 1 << 30, 1.5, "lots", "nan"])
def test_memory_mib_is_validated(tmp_path, value):
    from runner.cases import load_case

    path = tmp_path / "m.toml"
    literal = json.dumps(value) if isinstance(value, str) and value != "nan" else str(value)
    path.write_text(
        f'kind = "p10"\n[execution]\nmemory_mib = {literal}\n[[runs]]\nframework = "burn"\nmode = "detach"\n'
    )
    with pytest.raises(BadInput, match=r"execution\.memory_mib"):
        load_case(path)


def test_the_default_limit_is_applied_to_every_run(tmp_path):
    from runner.cases import load_case

    path = tmp_path / "d.toml"
    path.write_text('kind = "p10"\n[[runs]]\nframework = "burn"\nmode = "detach"\n')
    assert load_case(path).memory_mib == limits.DEFAULT_MEMORY_MIB == 8192


# ---- real runs ----------------------------------------------------------------------

# (framework, mode, memory_mib, what the failure says): each a case of its own, all in one `check`.
REAL_RUNS = [
    ("burn", "detach", 1024, "memory allocation of"),  # Rust's allocation failure, then abort
    ("torch", "detach", 4096, "can't allocate memory"),  # torch's allocator
    # forked from the zygote, torch is mapped already and its first tensor does not fit (in a fresh
    # worker, torch itself would not: its libraries cannot be mapped)
    ("torch", "ema-only", 1024, ""),
]


def big_case(folder, framework: str, mode: str, memory_mib: int):
    """A p10 run whose first tensor, its 16384x16384 weights (1 GiB), is more than its limit leaves
    it (torch's libraries take ~3 GiB of address space): it fails at its first large allocation,
    before any computation. Without the limit, a step of this size takes minutes: the run would
    reach its 300 s timeout."""
    name = f"big-{framework}-{mode}-{memory_mib}"
    path = folder / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nkind = "p10"\n[params]\nd_in = 16384\nd_out = 16384\nbatch = 4096\nsteps = 2000\n'
        f"[execution]\ntimeout_s = 300\nmemory_mib = {memory_mib}\n"
        f'[[runs]]\nframework = "{framework}"\nmode = "{mode}"\n'
    )
    return path


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory) -> tuple[subprocess.CompletedProcess[str], dict[str, dict]]:
    """One `check` of every case of `REAL_RUNS` (each with its own limit; the torch ones forked
    from one zygote, side by side): the process, and each case's run record by case name."""
    folder = tmp_path_factory.mktemp("big")
    out = folder / "out.json"
    cases = [big_case(folder, framework, mode, memory_mib) for framework, mode, memory_mib, _says in REAL_RUNS]
    proc = subprocess.run(
        [sys.executable, "-m", "runner", "check", *map(str, cases), "-q", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    runs = {run["case"]: run for run in json.loads(out.read_text())["runs"]} if out.exists() else {}
    return proc, runs


@pytest.mark.slow
@pytest.mark.parametrize("framework, mode, memory_mib, says", REAL_RUNS)
def test_a_real_run_too_large_for_its_limit_is_oom(real_runs, framework, mode, memory_mib, says):
    proc, runs = real_runs
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(runs) == len(REAL_RUNS), sorted(runs)
    run = runs[f"big-{framework}-{mode}-{memory_mib}"]
    assert run["framework"] == framework and run["mode"] == mode
    assert run["outcome"] == "oom" and run["memory_mib"] == memory_mib, run.get("crash") or run.get("error")
    assert says in run["oom"]["detail"] + run["oom"]["stderr_tail"]
    # the limit stops it at its first large allocation, before its first step (a step of this size
    # takes minutes, so a run the limit did not stop would reach its 300 s timeout), not at a time
    assert run["checkpoints"] == [] and run["step_ms"] == [], (run["checkpoints"], len(run["step_ms"]))
