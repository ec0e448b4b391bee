"""The zygote (`runner.zygote`, `runner.workers.fork`): torch's semantic runs, its FLOP counts
and the program pool's torch workers forked from a process that has imported torch. Real torch
runs, each forked and fresh (a timed request, which never forks): the same outcome,
observations, error, crash, timeout and oom; the forked ones really forked (one interpreter
start for them all); a stop signal, a killed runner and a dead zygote leave no process behind
and lose no run.

A crash, a hang and a slow run come from the real torch program adapter under a
`sitecustomize` (`HOOK`) on the workers' PYTHONPATH: in every interpreter of that environment
(the zygote, a fresh worker) it logs its start and wraps the adapter's `run`, which logs its
pid, parent and the test under way, and crashes, hangs or sleeps by the run's mode (`slow`: a
forked run sleeps a minute, one in a fresh worker not at all; a pool worker's runs, whose mode is
always `generated`, crash when a test has made the file LOG.crash-next, once)."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fake_runs import ROOT, SMALL_P10, alive, gone

from runner import noise, workers
from runner.cases import load_case
from runner.engine import request_for
from runner.execute import WORKER_ENV, CountRequest, RunRequest, count_flop, execute, sweep_stale
from runner.fuzz.pool import WorkerPool
from runner.model.results import RawRun
from runner.program import data, syntax

HOOK = r"""
import os, sys

_log = os.environ.get("ZYGOTE_TEST_LOG")


def _say(line):
    with open(_log, "a") as log:
        log.write(line + "\n")


if _log:
    _start = os.getpid()  # a forked run's pid is not its interpreter's (the zygote's)
    _say(f"start {_start}")
    import signal, time
    import runner.adapters.torch_program as _adapter

    _run = _adapter.run

    def run(mode, params, progress):
        try:
            os.unlink(_log + ".crash-next")
            mode = "crash"
        except FileNotFoundError:
            pass
        test = os.environ.get("PYTEST_CURRENT_TEST", "-").split(" ")[0]
        _say(f"run {os.getpid()} {os.getppid()} {mode} {test}")
        if mode == "crash":
            print("about to die", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGSEGV)
        if mode == "hang":
            time.sleep(600)
        if mode == "slow" and os.getpid() != _start:
            time.sleep(60)  # forked: it is to die with its zygote; run again fresh, it does not wait
        return _run("main", params, progress)

    _adapter.run = run
"""


def cases_file(name: str) -> Path:
    return ROOT / "cases" / f"{name}.toml"


def pair(case_name: str, mode: str, steps: int | None = None) -> tuple[RawRun, RawRun]:
    """The run of `mode` forked, then fresh (the same request, timed)."""
    case = load_case(cases_file(case_name), steps=steps)
    forked = execute(request_for(case, "torch", mode, {}, noise.Controls(), timed=False))
    fresh = execute(request_for(case, "torch", mode, {}, noise.Controls(), timed=True))
    return forked, fresh


def semantics(run: RawRun) -> dict:
    """What a semantic run shows: outcome, observations, error, panic, checkpoints' steps and flags."""
    data = run.model_dump(mode="json")
    return {
        "outcome": data["outcome"],
        "observations": data.get("observations"),
        "error": data.get("error"),
        "panic": data.get("panic"),
        "versions": data.get("versions"),
        "checkpoints": [(c["step"], c.get("tracked"), c.get("flags")) for c in data.get("checkpoints") or []],
    }


class Hooked:
    """The workers' environment with `HOOK`, one log for the module (so one zygote serves it)."""

    def __init__(self, folder: Path) -> None:
        (folder / "sitecustomize.py").write_text(HOOK)
        self.log = folder / "log"
        self.env = {"PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)]), "ZYGOTE_TEST_LOG": str(self.log)}
        self.params = load_case(cases_file("backward_twice")).request_params("combined")

    def request(self, mode: str, timed: bool = False, timeout_s: float = 120) -> RunRequest:
        return RunRequest("hooked", "program", "torch", mode, self.params, timeout_s, self.env, timed=timed)

    def lines(self, what: str) -> list[list[str]]:
        text = self.log.read_text() if self.log.exists() else ""
        return [line.split()[1:] for line in text.splitlines() if line.split()[:1] == [what]]

    def runs(self, mode: str) -> list[tuple[int, int]]:
        """(pid, parent pid) of every run of `mode` so far."""
        return [(int(pid), int(ppid)) for pid, ppid, m, _test in self.lines("run") if m == mode]

    def wait_for_run(self, mode: str, count: int = 1, timeout: float = 60) -> tuple[int, int]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.runs(mode)) >= count:
                return self.runs(mode)[count - 1]
            time.sleep(0.05)
        raise AssertionError(f"no run of {mode} within {timeout} s")


@pytest.fixture(scope="module")
def hooked(tmp_path_factory) -> Hooked:
    return Hooked(tmp_path_factory.mktemp("zygote-hook"))


@pytest.fixture(autouse=True)
def real_workers(monkeypatch):
    monkeypatch.delenv(WORKER_ENV, raising=False)


# ---- the same outcomes ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["retain", "plain", "combined"])
def test_a_forked_run_shows_what_a_fresh_one_does(mode):
    forked, fresh = pair("backward_twice", mode)
    assert semantics(forked) == semantics(fresh)
    assert forked.outcome == ("error" if mode == "plain" else "ok")


def test_a_forked_training_loop_streams_the_same_checkpoints_and_values():
    forked, fresh = pair("optimizers_100_steps", "adam", steps=20)
    assert forked.outcome == "ok" and forked.checkpoints, forked
    assert semantics(forked) == semantics(fresh)


def test_a_forked_adapter_error_is_the_fresh_ones():
    """p10's torch adapter has no `without` mode: a ValueError, outcome `error`."""
    params = dict(SMALL_P10)
    runs = [execute(RunRequest("p", "p10", "torch", "without", params, 120, timed=t)) for t in (False, True)]
    assert [r.outcome for r in runs] == ["error", "error"]
    assert runs[0].error == runs[1].error and "without" in runs[0].error.message


def test_a_forked_crash_is_the_fresh_ones(hooked):
    forked, fresh = (execute(hooked.request("crash", timed=t)) for t in (False, True))
    for run in (forked, fresh):
        assert run.outcome == "crash" and run.crash is not None
        assert (run.crash.signal, run.crash.exit_code) == ("SIGSEGV", None)
        assert "about to die" in run.crash.stderr_tail and "Segmentation fault" in run.crash.stderr_tail
    (forked_pid, zygote), (fresh_pid, parent) = hooked.runs("crash")[-2:]
    assert parent == os.getpid() and zygote != os.getpid()
    assert not alive(forked_pid) and not alive(fresh_pid)


def test_a_forked_hang_is_a_timeout_and_its_process_is_gone(hooked):
    execute(hooked.request("warm"))  # the zygote started: its import is not part of the timeout
    before = len(hooked.runs("hang"))
    # side by side: each waits out its own timeout (the fresh one imports torch meanwhile)
    with ThreadPoolExecutor(max_workers=2) as pool:
        forked, fresh = pool.map(lambda t: execute(hooked.request("hang", timed=t, timeout_s=2.5)), (False, True))
    for run in (forked, fresh):
        assert run.outcome == "timeout" and run.timeout_s == 2.5
    hung = hooked.runs("hang")[before:]
    assert any(parent != os.getpid() for _pid, parent in hung), hung  # the forked one was in its hang
    assert all(not alive(pid) for pid, _parent in hung)


@pytest.mark.slow
def test_a_forked_run_too_large_for_its_limit_is_oom(tmp_path):
    """The size of `test_memory`'s runs, 16384x16384 weights (1 GiB), capped at 3840 MiB: torch's
    ~3 GiB of address space fits under the cap, forked or fresh, and the weights do not (with
    hundreds of MiB of margin each way): their allocation, before any computation, fails."""
    path = tmp_path / "big.toml"
    path.write_text(
        'kind = "p10"\n[params]\nd_in = 16384\nd_out = 16384\nbatch = 4096\nsteps = 2000\n'
        '[execution]\ntimeout_s = 300\nmemory_mib = 3840\n[[runs]]\nframework = "torch"\nmode = "ema-only"\n'
    )
    case = load_case(path)
    forked, fresh = (
        execute(request_for(case, "torch", "ema-only", {}, noise.Controls(), timed=t)) for t in (False, True)
    )
    for run in (forked, fresh):
        assert run.outcome == "oom" and run.oom is not None and run.oom.limit_mib == 3840
        assert "can't allocate memory" in run.oom.detail
        assert run.checkpoints == []


# ---- really forked -------------------------------------------------------------------------


def test_forked_runs_start_from_one_interpreter_and_much_sooner(hooked):
    """Five forked runs add no interpreter start (the zygote's is the one, at most); each fresh
    one adds its own. Forked, a run takes a fraction of a fresh one's time (a ratio, one test)."""
    execute(hooked.request("warm"))
    starts, zygotes = len(hooked.lines("start")), workers.zygote_starts()
    forked = [execute(hooked.request("quick")) for _ in range(5)]
    assert len(hooked.lines("start")) == starts and workers.zygote_starts() == zygotes
    fresh = [execute(hooked.request("quick", timed=True)) for _ in range(2)]
    assert len(hooked.lines("start")) == starts + 2
    assert all(r.outcome == "ok" for r in forked + fresh)
    assert {semantics(r)["observations"] == semantics(fresh[0])["observations"] for r in forked} == {True}
    runs = hooked.runs("quick")
    parents = {parent for _pid, parent in runs[:5]}
    assert len(parents) == 1 and parents != {os.getpid()}, runs  # one zygote, not this process
    assert {parent for _pid, parent in runs[5:]} == {os.getpid()}
    # the child has the run's environment, volatile variables included (the test under way)
    tests = {test for _pid, _parent, mode, test in hooked.lines("run") if mode == "quick"}
    assert tests == {os.environ["PYTEST_CURRENT_TEST"].split(" ")[0]}
    forked_s = statistics.median(r.wall_s for r in forked)
    fresh_s = statistics.median(r.wall_s for r in fresh)
    assert forked_s < fresh_s / 3, (forked_s, fresh_s)


def test_only_torchs_semantic_runs_with_the_real_worker_fork(monkeypatch):
    from runner.execute import _worker_command, forks

    def request(framework: str, timed: bool) -> RunRequest:
        return RunRequest("c", "program", framework, "m", {}, 60, timed=timed)

    default = _worker_command(None)
    assert forks(request("torch", False), default)
    assert not forks(request("torch", True), default), "a timed run: a fresh process"
    assert not forks(request("burn", False), default)
    assert not forks(request("torch", False), [sys.executable, "stand_in.py"])
    monkeypatch.setenv(WORKER_ENV, f'["{sys.executable}", "stand_in.py"]')
    assert not forks(request("torch", False), _worker_command(None))
    assert RunRequest("c", "p10", "torch", "detach", {}, 60).timed, "forking is asked for, never assumed"


# ---- the program pool's torch workers, and the FLOP count -------------------------------------

POOL_PROGRAM = "p = param(3)\nopt = sgd(lr=0.1)\nloss = sum(tanh(p) * p)\nbackward(loss)\nstep(opt)\nobserve(p)"
FRESH_POOL_WORKER = [sys.executable, "-m", "runner.pool_worker", "torch"]


def pool_program() -> dict:
    return data.materialize(syntax.parse(POOL_PROGRAM, where="pool"), seed=0).model_dump(mode="json")


def test_a_pool_worker_is_forked_and_answers_as_a_fresh_one(hooked):
    """The pool's torch worker (the real one) is a child of the zygote; a stand-in command (here
    the same worker, started fresh) is not forked. Both give the same result; a second pool's
    worker adds no interpreter start, and takes a fraction of a fresh one's time to answer its
    first program (a ratio, one test)."""
    execute(hooked.request("warm"))  # the zygote of this environment runs
    starts = len(hooked.lines("start"))
    answers, seconds = [], []
    for command in (None, None, FRESH_POOL_WORKER):
        began = time.monotonic()
        with WorkerPool(timeout_s=120, env=hooked.env, commands={"torch": command} if command else None) as pool:
            answers.append(pool.run_pair(pool_program(), ("torch",))["torch"])
        seconds.append(time.monotonic() - began)
    assert len(hooked.lines("start")) == starts + 1, "the fresh worker's interpreter, and no other"
    assert [a["outcome"] for a in answers] == ["ok"] * 3, answers
    assert answers[0]["observations"] == answers[1]["observations"] == answers[2]["observations"]
    zygote = hooked.runs("warm")[-1][1]
    runs = hooked.runs("generated")[-3:]
    assert zygote != os.getpid() and [parent for _pid, parent in runs] == [zygote, zygote, os.getpid()], runs
    assert seconds[1] < seconds[2] / 3, seconds


def test_a_forked_pool_worker_that_crashes_is_a_crash_and_the_next_program_gets_another(hooked):
    execute(hooked.request("warm"))
    starts = len(hooked.lines("start"))
    with WorkerPool(timeout_s=120, env=hooked.env) as pool:
        Path(str(hooked.log) + ".crash-next").touch()
        crashed = pool.run_pair(pool_program(), ("torch",))["torch"]
        again = pool.run_pair(pool_program(), ("torch",))["torch"]
        assert pool.crashes == 1
    assert crashed["outcome"] == "crash", crashed
    # the worker's stderr (faulthandler's report, its last 800 characters) reached the pool's file
    assert "signal SIGSEGV" in crashed["failure"]["message"] and "Extension modules" in crashed["failure"]["message"]
    assert again["outcome"] == "ok", again
    (crash_pid, zygote), (again_pid, again_parent) = hooked.runs("crash")[-1], hooked.runs("generated")[-1]
    assert again_parent == zygote != os.getpid() and again_pid != crash_pid  # forked again by the zygote
    assert len(hooked.lines("start")) == starts, "no interpreter started"
    assert gone(crash_pid) and gone(again_pid), "the pool's workers end with the pool"


def test_the_flop_count_is_forked_too(hooked):
    execute(hooked.request("warm"))
    starts, zygotes = len(hooked.lines("start")), workers.zygote_starts()
    recipes = {"0": load_case(cases_file("optimizers_100_steps"), steps=5).programs["adam"].dump()}
    counts = count_flop(CountRequest(recipes, timeout_s=120, env=hooked.env))
    assert set(counts) == {"0"} and counts["0"] > 0, counts
    assert len(hooked.lines("start")) == starts and workers.zygote_starts() == zygotes, "forked, no new interpreter"


def test_a_spawn_with_the_wrong_descriptors_or_entry_is_refused(hooked):
    with pytest.raises(ValueError, match="'serve' fork takes 3 descriptors"):
        workers.fork(["torch"], memory_mib=None, env=hooked.env, fds=(0, 1), entry="serve")
    with pytest.raises(KeyError):
        workers.fork(["torch"], memory_mib=None, env=hooked.env, fds=(0, 1), entry="exec")
    # the zygote checks them too: it refuses, and forks nothing
    execute(hooked.request("warm"))
    env = workers.environment(noise.Controls(), hooked.env)
    zygote = workers._ZYGOTES[workers._env_key(env)]
    read, write = os.pipe()
    try:
        for entry, fds in (("serve", (read, write)), ("run", (read, write, write)), ("exec", (read, write))):
            assert zygote.spawn(entry, ["torch"], None, env, fds) is None, entry
    finally:
        os.close(read)
        os.close(write)
    assert execute(hooked.request("quick")).outcome == "ok", "and it still serves"


# ---- nothing left behind, nothing lost -----------------------------------------------------


def test_kill_running_ends_the_forked_runs_under_way_at_once(hooked):
    execute(hooked.request("warm"))
    before = len(hooked.runs("hang"))
    records: list[RawRun] = []
    threads = [threading.Thread(target=lambda: records.append(execute(hooked.request("hang")))) for _ in range(2)]
    for thread in threads:
        thread.start()
    pids = [hooked.wait_for_run("hang", before + i + 1)[0] for i in range(2)]
    zygote = hooked.runs("hang")[-1][1]
    workers.kill_running()
    for thread in threads:
        thread.join(timeout=20)
    assert not any(thread.is_alive() for thread in threads), "a run under way did not return"
    assert [r.outcome for r in records] == ["crash", "crash"]
    assert all(gone(pid) for pid in [*pids, zygote])


def test_a_zygote_that_dies_under_a_run_leaves_it_to_a_fresh_worker(hooked):
    execute(hooked.request("warm"))
    before = len(hooked.runs("slow"))
    records: list[RawRun] = []
    thread = threading.Thread(target=lambda: records.append(execute(hooked.request("slow"))))
    thread.start()
    pid, zygote = hooked.wait_for_run("slow", before + 1)
    os.kill(zygote, signal.SIGKILL)
    thread.join(timeout=120)
    assert records and records[0].outcome == "ok", records
    again_pid, parent = hooked.runs("slow")[before + 1]
    assert parent == os.getpid() and again_pid != pid  # run again, fresh
    assert gone(pid) and gone(zygote)
    assert execute(hooked.request("quick")).outcome == "ok"  # and the next run has a zygote again
    _pid, parent = hooked.runs("quick")[-1]
    assert parent not in (os.getpid(), zygote), (parent, zygote)


def test_a_zygote_that_cannot_start_leaves_the_runs_to_fresh_workers(hooked, monkeypatch):
    # -S: without `HOOK` (which imports torch), the zygote's command fails at once
    monkeypatch.setattr(workers, "ZYGOTE_COMMAND", (sys.executable, "-S", "-c", "import sys; sys.exit(3)"))
    # an environment of its own: the zygote of no other test is the one that fails
    request = RunRequest(
        "hooked", "program", "torch", "nozygote", hooked.params, 120, {**hooked.env, "NO_ZYGOTE": "1"}, timed=False
    )
    zygotes, starts = workers.zygote_starts(), len(hooked.lines("start"))
    records = [execute(request) for _ in range(2)]
    assert [r.outcome for r in records] == ["ok", "ok"]
    assert {parent for _pid, parent in hooked.runs("nozygote")} == {os.getpid()}, "fresh workers"
    assert workers.zygote_starts() == zygotes + 1, "one zygote tried, and not again for the second run"
    assert len(hooked.lines("start")) == starts + 2, "two fresh workers' interpreters, no zygote's"


# ---- the command line: a stop signal, a killed runner --------------------------------------


def torch_case(folder: Path, name: str) -> Path:
    """A p10 torch run that runs for minutes (no timing claim: a semantic run, forked)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nkind = "p10"\n[params]\nd_in = 8\nd_out = 8\nbatch = 2\nsteps = 5000000\n'
        '[execution]\ntimeout_s = 600\n[[runs]]\nframework = "torch"\nmode = "detach"\n'
    )
    return path


def processes() -> dict[int, tuple[int, bytes]]:
    """pid -> (parent pid, command line) of every living process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state, ppid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
                cmdline = (entry / "cmdline").read_bytes()
            except (OSError, ValueError):
                continue
            if state != "Z":
                found[int(entry.name)] = (int(ppid), cmdline)
    return found


def wait_for_forked_runs(runner: int, count: int, timeout: float = 120) -> tuple[int, list[int]]:
    """The zygote of `runner` and its first `count` children (the forked runs), once running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        table = processes()
        zygotes = [pid for pid, (ppid, cmd) in table.items() if ppid == runner and b"runner.zygote" in cmd]
        if zygotes:
            runs = [pid for pid, (ppid, _cmd) in table.items() if ppid == zygotes[0]]
            if len(runs) >= count:
                return zygotes[0], runs
        time.sleep(0.1)
    raise AssertionError(f"no zygote with {count} runs under {runner} within {timeout} s")


def start_check(tmp_path: Path, count: int) -> subprocess.Popen[str]:
    cases = [torch_case(tmp_path / "cases", f"long{i}") for i in range(count)]
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != WORKER_ENV}
    env.update({"TMPDIR": str(tmp_path / "tmp"), "RUNNER_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)})
    return subprocess.Popen(
        [sys.executable, "-m", "runner", "check", *map(str, cases), "--jobs", "2", "--json", str(tmp_path / "out.json"),
         "-q"],
        cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_check_during_forked_runs_leaves_no_process(tmp_path, sig):
    proc = start_check(tmp_path, 3)
    zygote, runs = wait_for_forked_runs(proc.pid, 2)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert all(gone(pid) for pid in [zygote, *runs]), "a forked run or its zygote outlived the check"
    assert list((tmp_path / "tmp").glob("runner-*")) == []
    assert "before any run completed: nothing to keep" in err and "Traceback" not in err


def test_a_killed_runner_takes_its_zygote_and_forked_runs_along(tmp_path):
    proc = start_check(tmp_path, 2)
    zygote, runs = wait_for_forked_runs(proc.pid, 2)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert all(gone(pid) for pid in [zygote, *runs]), "the zygote or a forked run outlived its killed runner"
    sweep_stale(tmp_path / "tmp")  # the folders a killed runner could not remove
