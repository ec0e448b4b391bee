"""SIGINT, SIGTERM and SIGHUP to `check`, `report` and `upgrade-check`: the
running worker's process group is killed, the `runner-*` temporary folder
removed, the runs completed so far kept (marked partial) and said where, and
the exit code is 128 + the signal. A worker dies with its runner even when the
runner is killed outright (SIGKILL), and the next run removes the folder it left.

Real signals to real `python3 -m runner` processes; the workers are stand-ins
(`fake_runs`), so nothing here waits for torch or burn."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest
from fake_runs import ROOT, case_file, environment, gone, start, wait_for_pids, worker_script
from report_fixtures import SAMPLE_1, report, snapshot

from runner.errors import Interrupted
from runner.execute import RunRequest, execute
from runner.signals import deferred, stop_on_signals

SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGINT]


def one_fast(*signals: int) -> list:
    """Each signal as a parameter; all but the first marked slow (each test starts the CLI: 2-3 s)."""
    return [
        pytest.param(s, id=signal.Signals(s).name, marks=[pytest.mark.slow] if i else []) for i, s in enumerate(signals)
    ]


def two_cases(tmp_path):
    """A case that completes at once, then one that runs for an hour."""
    return case_file(tmp_path / "cases", "quick", "without"), case_file(tmp_path / "cases", "slow", "detach")


def interrupt(proc, tmp_path, sig, workers=2, twice=False):
    pids = wait_for_pids(tmp_path, workers)
    time.sleep(0.3)  # the runner is waiting for the last worker
    proc.send_signal(sig)
    if twice:
        time.sleep(0.02)
        proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return pids, out, err


def no_leftovers(tmp_path, pids):
    assert all(gone(pid) for pid in pids), "a worker outlived the runner"
    assert list((tmp_path / "tmp").glob("runner-*")) == []


def kept_file(err: str) -> dict:
    line = next(line for line in err.splitlines() if "kept in" in line)
    path = line.split("kept in ", 1)[1].split(" (marked partial)")[0]
    return json.loads(open(path).read())


@pytest.mark.parametrize("sig", one_fast(*SIGNALS))
def test_a_signal_to_check_keeps_the_completed_runs_in_its_json(tmp_path, sig):
    quick, slow = two_cases(tmp_path)
    out = tmp_path / "out.json"
    proc = start(tmp_path, "check", str(quick), str(slow), "--json", str(out), "-q")
    pids, _, err = interrupt(proc, tmp_path, sig)
    assert proc.returncode == 128 + sig, err
    no_leftovers(tmp_path, pids)
    doc = json.loads(out.read_text())
    name = signal.Signals(sig).name
    assert doc["partial"] is True and doc["partial_reason"] == f"interrupted by {name} after 1 of 2 runs"
    assert [r["case"] for r in doc["runs"]] == ["quick"]
    assert f"interrupted by {name}: 1 completed runs kept in {out} (marked partial)" in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_without_json_the_completed_runs_go_to_a_kept_file_named_on_stderr(tmp_path):
    quick, slow = two_cases(tmp_path)
    proc = start(tmp_path, "check", str(quick), str(slow), "-q")
    pids, _, err = interrupt(proc, tmp_path, signal.SIGTERM)
    assert proc.returncode == 143
    no_leftovers(tmp_path, pids)
    doc = kept_file(err)
    assert doc["partial"] and [r["case"] for r in doc["runs"]] == ["quick"]
    assert str(tmp_path / "cache" / "kept") in err


def test_a_second_signal_during_the_cleanup_does_not_cut_it_short(tmp_path):
    quick, slow = two_cases(tmp_path)
    out = tmp_path / "out.json"
    proc = start(tmp_path, "check", str(quick), str(slow), "--json", str(out), "-q")
    pids, _, err = interrupt(proc, tmp_path, signal.SIGTERM, twice=True)
    assert proc.returncode == 143 and "Traceback" not in err
    no_leftovers(tmp_path, pids)
    assert json.loads(out.read_text())["partial"] is True


@pytest.mark.slow
def test_a_signal_before_any_run_completed_keeps_nothing(tmp_path):
    _, slow = two_cases(tmp_path)
    out = tmp_path / "out.json"
    proc = start(tmp_path, "check", str(slow), "--json", str(out), "-q")
    pids, _, err = interrupt(proc, tmp_path, signal.SIGHUP, workers=1)
    assert proc.returncode == 129
    no_leftovers(tmp_path, pids)
    assert "before any run completed: nothing to keep" in err and not out.exists()


def test_a_signal_kills_every_run_going_side_by_side(tmp_path):
    """Semantic runs go side by side (`--jobs 2`): a signal kills both workers under way, the
    third run never starts, and none of the killed runs is recorded as a crash."""
    slow = [case_file(tmp_path / "cases", f"slow{i}", "detach") for i in range(3)]
    out = tmp_path / "out.json"
    proc = start(tmp_path, "check", *map(str, slow), "--jobs", "2", "--json", str(out), "-q")
    pids, _, err = interrupt(proc, tmp_path, signal.SIGTERM, workers=2)
    assert proc.returncode == 128 + signal.SIGTERM, err
    no_leftovers(tmp_path, pids)
    time.sleep(0.5)
    assert len((tmp_path / "pids").read_text().split()) == 2, "a run started after the signal"
    assert "before any run completed: nothing to keep" in err and not out.exists()
    assert "Traceback" not in err


@pytest.mark.parametrize("sig", one_fast(signal.SIGHUP, signal.SIGTERM))
def test_a_signal_to_report_leaves_the_previous_report_and_keeps_the_runs(tmp_path, sig):
    out = tmp_path / "out"
    assert report("--from-results", SAMPLE_1, "--out", out) == 1
    before = snapshot(out)
    quick, slow = two_cases(tmp_path)
    proc = start(tmp_path, "report", str(quick), str(slow), "--out", str(out))
    pids, _, err = interrupt(proc, tmp_path, sig)
    assert proc.returncode == 128 + sig, err
    no_leftovers(tmp_path, pids)
    assert snapshot(out) == before
    assert [r["case"] for r in kept_file(err)["runs"]] == ["quick"]


UPGRADE_DRIVER = textwrap.dedent(
    """
    import sys
    from runner import cli
    from runner.model.upgrade import Build
    from runner import burn_sources as sources
    from runner.upgrade import command

    # Stand-ins for the registry and the probe builds: the runs are fake workers anyway.
    sources.resolve = lambda source: source
    command.probe_build.build = lambda source, say: Build(source=source.label, ok=True, key="k", folder="f")
    sys.exit(cli.main(sys.argv[1:]))
    """
)


@pytest.mark.parametrize("sig", one_fast(signal.SIGTERM, signal.SIGINT))
def test_a_signal_to_upgrade_check_keeps_each_sides_completed_runs(tmp_path, sig):
    quick, slow = two_cases(tmp_path)
    driver = tmp_path / "driver.py"
    driver.write_text(UPGRADE_DRIVER)
    proc = subprocess.Popen(
        [sys.executable, str(driver), "upgrade-check", str(quick), str(slow), "--from", "0.22.1", "--to", "0.22.2",
         "--out", str(tmp_path / "up"), "-q"],
        cwd=ROOT, env=environment(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # quick on both sides, then slow on the first: three workers
    pids, _, err = interrupt(proc, tmp_path, sig, workers=3)
    assert proc.returncode == 128 + sig, err
    no_leftovers(tmp_path, pids)
    kept = [line for line in err.splitlines() if "completed runs kept in" in line]
    assert len(kept) == 2, err  # one partial document per side
    assert not (tmp_path / "up").exists()


def test_a_killed_runner_takes_its_worker_along_and_the_next_run_sweeps_its_folder(tmp_path, monkeypatch):
    _, slow = two_cases(tmp_path)
    proc = start(tmp_path, "check", str(slow), "-q")
    (pid,) = wait_for_pids(tmp_path, 1)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert gone(pid), "the worker outlived its killed parent"
    assert len(list((tmp_path / "tmp").glob("runner-*"))) == 1  # SIGKILL leaves no time to clean up
    # The next run, in this process (every command's runs go through `execute`, which sweeps the
    # temporary folder, TMPDIR's for the command: here tempfile's own), of the stand-in worker.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    quick = RunRequest("quick", "p10", "burn", "without", {"steps": 3}, 60)
    record = execute(quick, worker=[sys.executable, str(worker_script(tmp_path))])
    assert record.outcome == "ok", record
    assert list((tmp_path / "tmp").glob("runner-*")) == []


def test_a_live_runners_folder_is_not_swept(tmp_path):
    from runner.execute import sweep_stale

    mine = tmp_path / f"runner-{os.getppid()}-abc"
    dead = tmp_path / "runner-999999999-abc"
    other = tmp_path / "runner-xyz"
    for folder in (mine, dead, other):
        folder.mkdir()
    assert sweep_stale(tmp_path) == [dead]
    assert mine.exists() and other.exists() and not dead.exists()


# ---- the mechanism, in this process ------------------------------------------


@pytest.fixture
def handlers():
    """The stop signals' handlers, put back after the test (a signalled block leaves its own)."""
    saved = {sig: signal.getsignal(sig) for sig in SIGNALS}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    yield saved
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    while signal.sigtimedwait(SIGNALS, 0) is not None:
        pass  # a signal the test sent and the block held back: consumed, not delivered to pytest
    for sig, handler in saved.items():
        signal.signal(sig, handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def test_the_stop_signals_raise_interrupted_once_and_are_ignored_after(handlers):
    with pytest.raises(Interrupted) as info, stop_on_signals():
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(5)
    assert info.value.signum == signal.SIGHUP and info.value.exit_code == 129
    os.kill(os.getpid(), signal.SIGTERM)  # the process is on its way out: blocked or ignored, never fatal
    time.sleep(0.1)


def test_without_a_signal_the_previous_handlers_come_back(handlers):
    with stop_on_signals():
        assert signal.getsignal(signal.SIGTERM) is not handlers[signal.SIGTERM]
    assert all(signal.getsignal(sig) is handler for sig, handler in handlers.items())


def test_deferred_signals_act_after_the_block(handlers):
    done = []
    with pytest.raises(Interrupted), stop_on_signals():
        with deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)
            done.append("the block finished")
        time.sleep(5)
    assert done == ["the block finished"]
