"""The runs' progress on stderr: plain lines when stderr is not a terminal, a
status line rewritten in place when it is (tested on a pseudo-terminal), and
names from case files shown through the terminal escape in both forms and in
the summary on stdout. Runs use the stand-in worker (`fake_runs`)."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading
from types import SimpleNamespace

from fake_runs import ROOT, case_file, environment

from runner.progress import ConsoleReporter, elapsed_text
from runner.statusline import ERASE

HOSTILE = "ev\x1b]0;pwned\x07\x1b[2Jil"


def _case(name, steps=400):
    return SimpleNamespace(name=name, steps=steps)


def _record(name, framework="burn", mode="without", repeats=1, panic=None):
    metrics = SimpleNamespace(repeats=repeats, slowdown_ratio=1.0)
    return SimpleNamespace(
        case=name,
        framework=framework,
        mode=mode,
        outcome="ok" if panic is None else "panic",
        failure=None,
        panic=panic,
        crash=None,
        error=None,
        wall_s=0.5,
        metrics=metrics,
    )


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_plain_lines_when_stderr_is_not_a_terminal():
    out = io.StringIO()
    reporter = ConsoleReporter(out)
    assert not reporter.live
    case = _case("p10_ema")
    reporter.run_started(1, 1, case, "burn", "without")
    reporter.checkpoint(case, "burn", "without", {"step": 50, "ms_per_step": 1.0, "tracked": False})
    reporter.run_finished(case, _record("p10_ema"))
    lines = out.getvalue().splitlines()
    assert lines[0] == "[1/1] p10_ema: burn without (400 steps)"
    assert lines[1].startswith("  burn without step 50: 1.00 ms/step")
    assert lines[2].startswith("  -> p10_ema burn without: ok, 0.5 s wall")
    assert "\x1b" not in out.getvalue() and "\r" not in out.getvalue()


def test_a_status_line_on_a_terminal_counts_runs_and_repeats(monkeypatch):
    monkeypatch.delenv("TERM", raising=False)
    out = FakeTerminal()
    reporter = ConsoleReporter(out)
    assert reporter.live
    a, b = _case("a"), _case("b")
    reporter.run_started(1, 4, a, "torch", "main")
    reporter.run_started(2, 4, b, "burn", "detach (repeat 1/3)")
    reporter.checkpoint(b, "burn", "detach", {"step": 150})
    assert reporter.status.text.startswith(
        "[0/4 done, 0 s] running: a torch main, b burn detach (repeat 1/3) (step 150)"
    )
    reporter.run_finished(a, _record("a", "torch", "main"))
    reporter.run_started(3, 4, b, "burn", "detach (repeat 2/3)")  # the first repeat is over
    assert reporter.status.text.startswith("[2/4 done")
    reporter.run_started(4, 4, b, "burn", "detach (repeat 3/3)")
    reporter.run_finished(b, _record("b", "burn", "detach", repeats=3))
    text = out.getvalue()
    assert reporter.done == 4 and reporter.status.text == ""  # erased: nothing runs
    assert text.endswith(ERASE)  # the cursor at the start of an empty line for the summary
    kept = [line.rsplit(ERASE, 1)[-1] for line in text.split("\n")[:-1]]
    assert kept == [
        "  -> a torch main: ok, 0.5 s wall, slowdown ratio 1.00",
        "  -> b burn detach: ok, 0.5 s wall, slowdown ratio 1.00 (median of 3 repeats)",
    ]
    assert "[1/4]" not in text  # the start lines are the status line's job here


def test_names_from_case_files_cannot_drive_the_terminal_in_either_form(monkeypatch):
    monkeypatch.delenv("TERM", raising=False)
    panic = SimpleNamespace(location="src/x.rs:1:1", message="boom\x1b[2J\nFAIL forged", step=3, phase="backward")
    for out in (io.StringIO(), FakeTerminal()):
        reporter = ConsoleReporter(out)
        case = _case(HOSTILE + "\nPASS")
        reporter.run_started(1, 1, case, "burn", "main\x1b[A")
        reporter.checkpoint(case, "burn", "main\x1b[A", {"step": 1, "flags": {"x\x1b": True}})
        reporter.run_finished(case, _record(case.name, mode="main\x1b[A", panic=panic))
        shown = out.getvalue().replace(ERASE, "")
        assert "\x1b" not in shown and "\x07" not in shown
        assert "ev\\x1b]0;pwned\\x07\\x1b[2Jil\\nPASS" in shown and "boom\\x1b[2J\\nFAIL forged" in shown
        assert not any(line.lstrip().startswith(("PASS", "FAIL")) for line in shown.splitlines())


def test_elapsed_text():
    assert [elapsed_text(s) for s in (0, 59.9, 65, 3599, 3725)] == [
        "0 s",
        "59 s",
        "1 min 05 s",
        "59 min 59 s",
        "1 h 02 min",
    ]


def _run_on_a_terminal(args, env):
    """The CLI with stderr on a pseudo-terminal (stdout a pipe): (exit code, stdout, what the terminal got)."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", *args],
        cwd=ROOT,
        env={**env, "TERM": "xterm", "COLUMNS": "100"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    got = bytearray()

    def read():
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the other side is closed
                return
            if not chunk:
                return
            got.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    out, _ = proc.communicate(timeout=300)
    reader.join(timeout=30)
    os.close(master)
    return proc.returncode, out.decode(), got.decode(errors="replace")


def test_check_on_a_terminal_draws_and_erases_a_status_line_and_piped_prints_lines(tmp_path):
    env = environment(tmp_path, FAKE_BODY="import time; time.sleep(2.5)")  # a run long enough for the clock to tick
    quick = case_file(tmp_path / "cases", "quick", "without")
    slow = case_file(tmp_path / "cases", "slow", "target")
    code, out, tty = _run_on_a_terminal(["check", str(quick), str(slow), "--jobs", "1"], env)
    assert code == 0, out + tty
    statuses = re.findall(r"\r\x1b\[K(\[\d/2 done, \d+ s\][^\r\n]*)", tty)
    assert "[0/2 done, 0 s] running: quick burn without" in statuses
    # The clock moves while a run says nothing (the line is redrawn every second).
    clock = {m.group(1) for s in statuses if (m := re.match(r"\[1/2 done, (\d+) s\] running: slow burn target", s))}
    assert len(clock) >= 2, statuses
    assert "[1/2]" not in tty and "step 1:" not in tty  # no start or checkpoint lines: the status says it
    assert "-> quick burn without: ok" in tty and "-> slow burn target: ok" in tty
    assert tty.endswith("\r\x1b[K")  # erased before the summary
    assert "2 runs; expectations:" in out and "\x1b" not in out

    piped = subprocess.run(
        [sys.executable, "-m", "runner", "check", str(quick), str(slow), "--jobs", "1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert piped.returncode == 0, piped.stderr
    assert "[1/2] quick: burn without (400 steps)" in piped.stderr and "burn target step 1:" in piped.stderr
    assert "\x1b" not in piped.stderr and "\r" not in piped.stderr


def test_a_case_file_named_with_escape_sequences_is_shown_not_obeyed(tmp_path):
    env = environment(tmp_path)
    folder = tmp_path / "cases"
    folder.mkdir()
    name = HOSTILE + "\nPASS"
    path = folder / f"{name}.toml"
    text = case_file(tmp_path / "x", "x", "without").read_text().replace('name = "x"\n', "")
    path.write_text(text)
    out = subprocess.run(
        [sys.executable, "-m", "runner", "check", str(path)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    for stream in (out.stdout, out.stderr):
        assert "\x1b" not in stream and "\x07" not in stream
        assert "ev\\x1b]0;pwned\\x07\\x1b[2Jil\\nPASS" in stream
    assert not any(line.startswith("PASS") for line in out.stdout.splitlines())
    # an error that quotes the path: shown, not obeyed, too
    missing = subprocess.run(
        [sys.executable, "-m", "runner", "check", str(folder / "gone\x1b[2J.toml")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "\x1b" not in missing.stderr and "gone\\x1b[2J" in missing.stderr
