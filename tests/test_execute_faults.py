"""The runner's own fault handling: a worker that crashes, hangs, fails or
lies is a recorded outcome, never a crash of the runner. The stand-in workers
here are fakes on purpose; nothing here claims to check torch or burn."""

import sys
import textwrap
import time

import pytest
from fake_runs import SMALL_P10

from runner.execute import RunRequest, execute

REQUEST = RunRequest("fake", "p10", "burn", "detach", {"steps": 10}, timeout_s=30)


def fake_worker(tmp_path, body: str) -> list[str]:
    script = tmp_path / "fake_worker.py"
    script.write_text(
        textwrap.dedent("""
        import json, os, signal, sys, time
        spec_path, result_path, progress_fd = sys.argv[1:]
        progress = os.fdopen(int(progress_fd), "w", buffering=1)
        def checkpoint(step):
            progress.write(json.dumps({"event": "checkpoint", "step": step, "ms_per_step": 1.0,
                                       "rss_delta_mib": 0.0, "tracked": True, "flags": {}}) + "\\n")
    """)
        + textwrap.dedent(body)
    )
    return [sys.executable, str(script)]


def test_segfault_is_a_crash_with_its_signal_and_the_checkpoints_seen(tmp_path):
    worker = fake_worker(
        tmp_path,
        """
        checkpoint(1); checkpoint(5)
        print("about to die", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    """,
    )
    seen = []
    record = execute(REQUEST, seen.append, worker=worker)
    assert record.outcome == "crash"
    assert record.crash.signal == "SIGSEGV"
    assert "about to die" in record.crash.stderr_tail
    assert [c.step for c in record.checkpoints] == [1, 5] == [c["step"] for c in seen]


def test_abort_is_a_crash(tmp_path):
    record = execute(REQUEST, worker=fake_worker(tmp_path, "os.abort()"))
    assert (record.outcome, record.crash.signal) == ("crash", "SIGABRT")


def test_exit_without_a_result_is_a_crash_with_its_exit_code(tmp_path):
    record = execute(
        REQUEST,
        worker=fake_worker(
            tmp_path,
            """
        sys.stderr.write("Traceback: something broke\\n"); sys.exit(7)
    """,
        ),
    )
    assert record.outcome == "crash"
    assert record.crash is not None and record.crash.model_dump() == {
        "signal": None,
        "exit_code": 7,
        "stderr_tail": "Traceback: something broke\n",
    }


def test_garbage_result_file_is_a_crash_not_a_runner_error(tmp_path):
    record = execute(
        REQUEST,
        worker=fake_worker(
            tmp_path,
            """
        open(result_path, "w").write("{not json")
    """,
        ),
    )
    assert record.outcome == "crash" and record.crash.exit_code == 0


def test_a_record_that_is_not_a_run_record_is_a_crash_with_the_reason(tmp_path):
    record = execute(
        REQUEST,
        worker=fake_worker(
            tmp_path,
            """
        json.dump({"outcome": "ok", "step_ms": ["fast"], "checkpoints": []}, open(result_path, "w"))
    """,
        ),
    )
    assert record.outcome == "crash" and record.crash is not None
    assert "invalid record" in record.crash.stderr_tail and "step_ms[0]" in record.crash.stderr_tail


def test_hang_is_a_timeout_and_the_worker_is_killed(tmp_path):
    pid_file = tmp_path / "pid"
    worker = fake_worker(
        tmp_path,
        f"""
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        checkpoint(1)
        time.sleep(600)
    """,
    )
    # The reference: a worker that sleeps as long as the timeout and then ends by itself, well within
    # its own timeout; what a run of that length costs here, start and reaping included.
    (tmp_path / "reference").mkdir()
    sleeper = fake_worker(tmp_path / "reference", "checkpoint(1)\ntime.sleep(2)\n")
    started = time.monotonic()
    execute(RunRequest("fake", "p10", "burn", "detach", {}, timeout_s=60), worker=sleeper)
    reference = time.monotonic() - started
    request = RunRequest("fake", "p10", "burn", "detach", {}, timeout_s=2)
    started = time.monotonic()
    record = execute(request, worker=worker)
    hung = time.monotonic() - started
    # killed at its timeout, not left to sleep its 600 s: about the reference (a ratio, not seconds)
    assert hung < 3 * reference, (hung, reference)
    assert record.outcome == "timeout" and record.timeout_s == 2
    assert [c.step for c in record.checkpoints] == [1]
    import os

    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_written_record_is_taken_as_is(tmp_path):
    record = execute(
        REQUEST,
        worker=fake_worker(
            tmp_path,
            """
        json.dump({"outcome": "ok", "step_ms": [1.0, 2.0], "checkpoints": []}, open(result_path, "w"))
    """,
        ),
    )
    assert record.outcome == "ok" and record.step_ms == [1.0, 2.0]
    assert (record.case, record.framework, record.mode) == ("fake", "burn", "detach")


def test_missing_worker_program_is_a_crash(tmp_path):
    record = execute(REQUEST, worker=[str(tmp_path / "no-such-program")])
    assert record.outcome == "crash"
    assert "could not start the worker" in record.crash.stderr_tail


# The real worker, with real adapters: an exception inside a run is outcome "error".


def test_real_worker_records_a_burn_argument_error():
    request = RunRequest("real", "p10", "burn", "detach", {"steps": 0}, timeout_s=120)
    record = execute(request)
    assert record.outcome == "error"
    assert record.error.type == "ValueError"
    assert record.error.message.startswith("steps:")
    assert record.versions["burn"] == "0.22.1"


def test_real_worker_records_a_torch_error():
    params = dict(SMALL_P10)
    record = execute(RunRequest("real", "p10", "torch", "without", params, timeout_s=300))
    assert record.outcome == "error"
    assert record.error.type == "ValueError" and "without" in record.error.message
    assert record.versions["torch"].startswith("2.15.0")


def test_real_worker_records_an_observed_nan_and_infinity():
    """The variance over one element is NaN, a log of 0 is -inf: observations, written in the
    results file's words for them (JSON has none), not a crash of the worker."""
    import math

    from runner.program import data, syntax

    source = "x = input(2, 1)\nz = input(2, init='zeros')\nv = var(x, 1)\nl = log(z)\nobserve(v)\nobserve(l)"
    program = data.materialize(syntax.parse(source, where="test"), seed=0).model_dump(mode="json")
    record = execute(RunRequest("real", "program", "burn", "main", {"program": program}, timeout_s=120))
    assert record.outcome == "ok"
    by_label = {o.label: o.values for o in record.observations}
    assert all(math.isnan(v) for v in by_label["v"])
    assert by_label["l"] == [-math.inf, -math.inf]
