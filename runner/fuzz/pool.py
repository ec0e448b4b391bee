"""Persistent worker processes for the fuzzer: many programs per process, and
nothing lost when one crashes or hangs.

Each framework has one worker (`runner.pool_worker`); `run_pair` sends a
program to both and reads both answers, so torch and burn run on the two cores
at once. A torch worker is forked from the zygote (`runner.workers.fork`), as
torch's semantic runs of `check` are: it starts in tens of milliseconds, not
the seconds torch's import takes, with the same limits and process controls; a
fresh one is started when no zygote can fork it. `run_batch` sends many programs to one worker; when the worker dies
or hangs in the middle of a batch, the programs it had not answered are run
again one at a time, each in a fresh worker, so the one that crashes is named
and the others still get their results. A crash or hang is a result
(`outcome` "crash" / "timeout"), never an exception of the fuzzer.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any

from .. import limits, workers
from ..errors import signal_name
from ..frameworks import FORKED_FRAMEWORK
from ..noise import Controls

Result = dict[str, Any]
STDERR_TAIL = 2000


class _Worker:
    """One worker process and its pipes. `environment`: the worker environment (`workers.environment`)."""

    def __init__(
        self, framework: str, command: list[str] | None, environment: dict[str, str], memory_mib: int | None
    ) -> None:
        self.framework = framework
        self.stderr = tempfile.TemporaryFile()
        # Forked or started, capped and tied to the runner's life as check's workers are (`runner.workers`).
        forked = self._fork(environment, memory_mib) if command is None and framework == FORKED_FRAMEWORK else None
        self.proc: subprocess.Popen[str] | workers.Forked
        self.stdin: IO[str]
        self.stdout: IO[str]
        if forked is not None:
            self.proc, self.stdin, self.stdout = forked
        else:
            proc = workers.start(
                command or [sys.executable, "-m", "runner.pool_worker", framework],
                memory_mib=memory_mib,
                env=environment,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                text=True,
            )
            assert proc.stdin is not None and proc.stdout is not None
            self.proc, self.stdin, self.stdout = proc, proc.stdin, proc.stdout
        self.next_id = 0
        # A reader thread turns the worker's answers into a queue: select() on a buffered
        # text stream misses lines already read ahead into its buffer.
        self.answers: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read_lines, daemon=True)
        self.reader.start()

    def _fork(self, env: dict[str, str], memory_mib: int | None) -> tuple[workers.Forked, IO[str], IO[str]] | None:
        """The worker forked from the zygote, with the pipes to its stdin and from its stdout;
        None when no zygote can fork it."""
        to_worker, from_worker = os.pipe(), os.pipe()
        theirs = (to_worker[0], from_worker[1], self.stderr.fileno())
        try:
            forked = workers.fork([self.framework], memory_mib=memory_mib, env=env, fds=theirs, entry="serve")
        except BaseException:
            for fd in (*to_worker, *from_worker):
                os.close(fd)
            raise
        os.close(to_worker[0])
        os.close(from_worker[1])
        if forked is None:
            os.close(to_worker[1])
            os.close(from_worker[0])
            return None
        stdin = os.fdopen(to_worker[1], "w", buffering=1, encoding="utf-8")
        stdout = os.fdopen(from_worker[0], "r", encoding="utf-8")
        return forked, stdin, stdout

    def _read_lines(self) -> None:
        try:
            for line in self.stdout:
                self.answers.put(line)
        except (OSError, ValueError):
            pass
        self.answers.put(None)  # end of stream: the worker died

    def send(self, program: dict[str, Any], dtype: str) -> int:
        self.next_id += 1
        self.stdin.write(json.dumps({"id": self.next_id, "program": program, "dtype": dtype}) + "\n")
        self.stdin.flush()
        return self.next_id

    def send_many(self, programs_json: str, dtype: str) -> int:
        """One request for many programs (`programs_json`: their list, encoded once for every
        lane it goes to): the worker runs them in one call (burn: `run_programs`). Written by a
        thread: a request larger than the pipe's buffer must not block the sender while the
        worker is still busy with the previous one."""
        self.next_id += 1
        line = f'{{"id": {self.next_id}, "dtype": {json.dumps(dtype)}, "programs": {programs_json}}}\n'

        def feed() -> None:
            try:
                self.stdin.write(line)
                self.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass  # the worker died: its answer never comes, and the batch is rerun

        threading.Thread(target=feed, daemon=True).start()
        return self.next_id

    def stderr_tail(self) -> str:
        self.stderr.seek(0, os.SEEK_END)
        size = self.stderr.tell()
        self.stderr.seek(max(0, size - STDERR_TAIL))
        return self.stderr.read().decode("utf-8", "replace")

    def kill(self) -> None:
        self.proc.poll()
        workers.stop(self.proc)
        for stream in (self.stdin, self.stdout):  # the worker is gone: its reader sees the end
            try:
                stream.close()
            except OSError:
                pass
        self.stderr.close()


def _forked_last(framework: str) -> bool:
    """The order in which workers are asked (a sort key): a forked framework's last, so that the
    others have their programs while its zygote may still be importing torch."""
    return framework == FORKED_FRAMEWORK


def _failure(outcome: str, message: str) -> Result:
    return {
        "outcome": outcome,
        "failure": {"message": message, "op": None, "op_index": None, "type": outcome},
        "observations": [],
        "step_ms": [],
        "checkpoints": [],
        "rss_samples": [],
    }


class WorkerPool:
    """`commands` replaces a framework's worker command (tests stand in workers that crash or
    hang); `env` is added to every worker's environment (which probe build to load);
    `memory_mib` caps each worker's address space, as a case's `execution.memory_mib` caps a
    check's worker (a worker that reaches it dies, and its program is a crash)."""

    def __init__(
        self,
        timeout_s: float = 30.0,
        commands: dict[str, list[str]] | None = None,
        env: dict[str, str] | None = None,
        memory_mib: int | None = limits.DEFAULT_MEMORY_MIB,
    ) -> None:
        self.timeout_s = timeout_s
        self.commands = commands or {}
        self.environment = workers.environment(Controls(), env)  # every worker's
        self.memory_mib = memory_mib
        self.workers: dict[str, _Worker] = {}
        self.crashes = 0
        self.timeouts = 0
        if FORKED_FRAMEWORK not in self.commands:  # its real worker: the zygote imports torch meanwhile
            workers.prestart(self.environment)

    def _worker(self, framework: str) -> _Worker:
        """The worker for `framework`, or for a second lane of it (`torch:float64`: the reference
        runs in a worker of its own, beside the float32 one)."""
        worker = self.workers.get(framework)
        if worker is None or worker.proc.poll() is not None:
            fw = framework.split(":", 1)[0]
            worker = self.workers[framework] = _Worker(fw, self.commands.get(fw), self.environment, self.memory_mib)
        return worker

    def _drop(self, framework: str, worker: _Worker | None = None) -> None:
        """Kill `worker` (default: the framework's current one) and forget it if it is current."""
        current = self.workers.get(framework)
        worker = worker or current
        if worker is current:
            self.workers.pop(framework, None)
        if worker is not None:
            worker.kill()

    def _read(self, worker: _Worker, deadline: float) -> Result | None:
        """The next answer, or None if the worker died (then it is reaped) or the deadline passed."""
        try:
            line = worker.answers.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None
        if line is None:  # end of its output: it died; wait for its status
            try:
                worker.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            return None
        answer: Result = json.loads(line)
        return answer

    def run_pair(
        self, program: dict[str, Any], frameworks: tuple[str, ...] = ("torch", "burn"), dtype: str = "float32"
    ) -> dict[str, Result]:
        """One program under each framework at once."""
        sent: dict[str, tuple[_Worker, int]] = {}
        for fw in sorted(frameworks, key=_forked_last):
            worker = self._worker(fw)
            try:
                sent[fw] = (worker, worker.send(program, dtype))
            except (BrokenPipeError, OSError):
                self._drop(fw)
                worker = self._worker(fw)
                sent[fw] = (worker, worker.send(program, dtype))
        out: dict[str, Result] = {}
        for fw in frameworks:
            worker, request = sent[fw]
            out[fw] = self._answer(fw, worker, request, time.monotonic() + self.timeout_s)
        return out

    def _answer(self, framework: str, worker: _Worker, request: int, deadline: float) -> Result:
        """The answer to `request` from the `worker` it went to: a worker that died meanwhile is a
        crash (with its stderr), not a fresh worker waited on for an answer it never got."""
        answer = self._read(worker, deadline)
        if answer is not None and answer.get("id") == request:
            result: Result = answer["result"]
            return result
        died = worker.proc.poll() is not None
        tail = worker.stderr_tail()
        self._drop(framework, worker)
        if died:
            self.crashes += 1
            code = worker.proc.returncode
            how = f"signal {signal_name(-code)}" if code is not None and code < 0 else f"exit code {code}"
            return _failure("crash", f"the {framework} worker died ({how}): {tail.strip()[-800:]}")
        self.timeouts += 1
        return _failure("timeout", f"no answer from the {framework} worker within {self.timeout_s:g} s")

    def run_batch(self, framework: str, programs: list[dict[str, Any]], dtype: str = "float32") -> list[Result]:
        """Many programs in one worker; after a crash or hang, the unanswered ones one at a time."""
        worker = self._worker(framework)
        ids = list(range(worker.next_id + 1, worker.next_id + 1 + len(programs)))

        def feed() -> None:  # in a thread: the worker's answers must be read while it is fed
            try:
                for p in programs:
                    worker.send(p, dtype)
            except (BrokenPipeError, OSError, ValueError):
                pass  # the worker died: its unanswered programs are rerun one at a time

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        results: list[Result | None] = [None] * len(programs)
        deadline_each = self.timeout_s
        for i, request in enumerate(ids):
            answer = self._read(worker, time.monotonic() + deadline_each)
            if answer is None or answer.get("id") != request:
                self._drop(framework, worker)
                for j in range(i, len(programs)):
                    results[j] = self._single(framework, programs[j], dtype)
                break
            results[i] = answer["result"]
        feeder.join(timeout=5)
        return [r if r is not None else _failure("crash", "lost") for r in results]

    def run_many(
        self,
        programs: list[dict[str, Any]],
        runs: tuple[tuple[str, str], ...] = (("torch", "float32"), ("burn", "float32")),
    ) -> dict[tuple[str, str], list[Result]]:
        """Every program under each (framework, dtype) of `runs`, batched: one request per run
        and framework, the frameworks' workers busy at once (a framework's second run is sent
        behind its first). A batch whose worker dies or hangs is run again one program at a
        time, each in a fresh worker, so the culprit is named and the others keep their results."""
        if not programs:
            return {run: [] for run in runs}
        sent: list[tuple[tuple[str, str], _Worker, int]] = []
        encoded = json.dumps(programs)
        lanes: dict[str, int] = {}
        named = []
        for fw, dtype in runs:
            lanes[fw] = lanes.get(fw, 0) + 1
            named.append((fw, dtype, fw if lanes[fw] == 1 else f"{fw}:{dtype}"))
        for fw, dtype, lane in sorted(named, key=lambda run: _forked_last(run[0])):
            worker = self._worker(lane)
            try:
                sent.append(((fw, dtype), worker, worker.send_many(encoded, dtype)))
            except (BrokenPipeError, OSError):
                self._drop(lane)
                worker = self._worker(lane)
                sent.append(((fw, dtype), worker, worker.send_many(encoded, dtype)))
        out: dict[tuple[str, str], list[Result]] = {}
        # A batch's deadline: the per-program timeout, twice (batches are small and fast; a hang
        # costs this once, then the per-program reruns find it).
        deadline = time.monotonic() + 2 * self.timeout_s
        for (fw, dtype), worker, request in sent:
            answer = self._read(worker, deadline)
            if answer is not None and answer.get("id") == request and len(answer.get("results", ())) == len(programs):
                out[(fw, dtype)] = answer["results"]
                continue
            lane = next(k for k, w in self.workers.items() if w is worker) if worker in self.workers.values() else fw
            self._drop(lane, worker)
            out[(fw, dtype)] = [self._single(fw, p, dtype) for p in programs]
        return out

    def _single(self, framework: str, program: dict[str, Any], dtype: str) -> Result:
        return self.run_pair(program, (framework,), dtype)[framework]

    def close(self) -> None:
        for fw in list(self.workers):
            self._drop(fw)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
