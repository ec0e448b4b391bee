"""Worker processes: started, limited and reaped one way, for every command.

`check`'s one-run workers (`runner.execute`) and the fuzzer's long-lived ones
(`runner.fuzz.pool`) are started here, each:

- in a process group of its own (`start_new_session`), so that killing the
  group kills whatever it started;
- with its address space capped (RLIMIT_AS, `memory_mib`) and tied to the
  runner's life (PR_SET_PDEATHSIG: if the runner dies, however it dies, the
  kernel kills the worker; `runner.limits.child_setup`);
- registered while it runs, so that a stop signal (SIGINT, SIGTERM, SIGHUP)
  kills every worker under way (`kill_running`) before the command unwinds.

`stop` kills the group of a worker that is still running and reaps it.

Torch's semantic runs, its FLOP counts and the program pool's torch workers are forked instead
(`fork`): a zygote (`runner.zygote`, one per runner process and worker environment, started
lazily at the first such run and kept for the process's life) has imported torch and the torch
adapters and run no torch op; for each run it forks a child that does what
`limits.child_setup` does (own session, RLIMIT_AS, killed with the zygote) and runs the
worker's `main` (`FORK_ENTRIES`). A run then starts in tens of milliseconds instead of the
seconds torch's import takes, and still has a process of its own: its own RSS, memory cap,
process group and timeout, a crash costs only that run, nothing outlives it. The protocol,
over a Unix SOCK_SEQPACKET socket pair, one JSON object per message:

- runner -> zygote: `spawn` (`id`, the `entry`, the worker's `args` (a run's without
  PROGRESS_FD), `memory_mib`, the environment's difference from the zygote's
  `setenv`/`unsetenv`) with the entry's descriptors: `run`, `runner.worker` with the run's
  stdout/stderr and its progress pipe; `serve`, `runner.pool_worker` with its stdin, stdout
  and stderr; `kill` (`pid`): kill that child's group, if it is an unreaped child of the
  zygote (so its pid cannot have been reused).
- zygote -> runner: `ready` once torch is imported; `started` (`id`, `pid`) with a pidfd of
  the child, or `refused` (`id`, `why`); `ended` (`pid`, wait `status`, `maxrss_kib`) once it
  has killed the child's group and reaped it.

The zygote is started like a worker (its own session; PR_SET_PDEATHSIG tied to the thread
that started it, which is its own reader thread here, alive exactly as long as it is: the
pool threads of `check` come and go) with the worker environment, so glibc's malloc settings
and the one-thread settings are in force from its start, as they are in a fresh worker's.
The runner's end closed (shutdown, or the runner gone), it kills every child's group, reaps
them and exits; a killed runner takes it along (PR_SET_PDEATHSIG), and its children with it
(theirs). `kill_running` kills every zygote: its children die by their parent-death signal
and the runs under way return at once. A zygote that cannot be started leaves the runs to
fresh workers (nothing is lost: `fork` returns None and the run runs as before); one that
dies under a run has that run run again in a fresh worker (`Forked.lost`).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

from . import limits, noise
from .paths import PROJECT_ROOT

# The process groups of the workers running now (they run side by side in threads): a signal
# arrives in the main thread, which kills them all (`kill_running`) before it unwinds.
_RUNNING: set[int] = set()
_LOCK = threading.Lock()


def environment(controls: noise.Controls, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A worker's environment: the runner's, with the noise controls, this checkout on the path, and `extra`."""
    env = noise.worker_env(os.environ, controls, noise.timed_cpu())
    env["PYTHONFAULTHANDLER"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    return {**env, **(extra or {})}


def start(
    command: Sequence[str],
    *,
    memory_mib: int | None,
    env: Mapping[str, str],
    stdin: int | IO[Any] | None,
    stdout: int | IO[Any] | None,
    stderr: int | IO[Any] | None,
    pass_fds: Sequence[int] = (),
    text: bool = False,
) -> subprocess.Popen[Any]:
    """Start a worker (its own process group, capped, tied to the runner) and register it."""
    proc: subprocess.Popen[Any] = subprocess.Popen(
        list(command),
        pass_fds=tuple(pass_fds),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env=dict(env),
        cwd=PROJECT_ROOT,
        start_new_session=True,
        preexec_fn=limits.child_setup(memory_mib),
        text=text,
        bufsize=1 if text else -1,
    )
    with _LOCK:
        _RUNNING.add(proc.pid)
    return proc


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def forget(proc: subprocess.Popen[Any]) -> None:
    with _LOCK:
        _RUNNING.discard(proc.pid)


def stop(proc: subprocess.Popen[Any] | Forked) -> None:
    """Kill the worker's group if it still runs, reap it, and forget it (a forked run: through
    its zygote, which reaps it)."""
    if isinstance(proc, Forked):
        proc.stop()
        return
    if proc.returncode is None:
        kill_group(proc.pid)
        proc.wait()
    forget(proc)


def kill_running() -> None:
    """Kill every worker under way (their callers then see them end at once), and every zygote
    (its forked runs die with it, and their callers see them end at once)."""
    with _LOCK:
        groups = list(_RUNNING)
    for pgid in groups:
        kill_group(pgid)
    with _ZYGOTES_LOCK:
        zygotes = list(_ZYGOTES.values())
        _ZYGOTES.clear()
    for zygote in zygotes:
        zygote.kill()


def running() -> int:
    """How many workers are registered now (for tests)."""
    with _LOCK:
        return len(_RUNNING)


# ---- the zygote: torch's semantic runs, forked from a process that has imported torch ---------

ZYGOTE_COMMAND = (sys.executable, "-m", "runner.zygote")
# How long a zygote may take to import torch (2-3 s on a loaded 2-core machine) and say it is ready.
ZYGOTE_START_S = 120.0
# How long the zygote may take to answer a spawn, or to report a child it was asked to kill.
ZYGOTE_ANSWER_S = 30.0
# The largest message either side sends (a spawn's arguments and environment difference).
MESSAGE_BYTES = 1 << 16
# Zygotes kept at once (each holds torch's ~600 MiB): a new worker environment retires the
# least recently used idle one beyond this.
MAX_ZYGOTES = 2
# A zygote that dies this many times (not killed by us) is not started again in this process.
MAX_DEATHS = 3
# What may differ between a zygote's environment and a run's: set in the child before the run.
# Nothing reads them at start-up (pytest names the test under way in the first).
VOLATILE_ENV = ("PYTEST_CURRENT_TEST",)

# What a zygote's child may run: the entry's name -> how many descriptors its spawn carries.
FORK_ENTRIES = {"run": 2, "serve": 3}

_EnvKey = tuple[tuple[str, str], ...]


def receive(sock: socket.socket, max_fds: int) -> tuple[dict[str, Any], list[int]] | None:
    """One message of the zygote's socket (either end) with the descriptors it carries; None when
    the other end is gone (any descriptors closed). A message that is not a JSON object is `{}`."""
    try:
        data, fds, _flags, _address = socket.recv_fds(sock, MESSAGE_BYTES, max_fds)
    except OSError:
        return None
    if not data:
        for fd in fds:
            os.close(fd)
        return None
    try:
        message = json.loads(data)
    except ValueError:
        message = None
    return (message if isinstance(message, dict) else {}), list(fds)


class Stopped(Exception):
    """The zygote of a run about to start was killed by `kill_running` (a stop signal)."""


class Forked:
    """A run forked by a zygote: what `runner.execute` waits for, watches and stops.

    `pid` is the child's (the leader of its own process group); `returncode` as `Popen`'s
    (negative: the signal), once the zygote has reaped it; `maxrss_bytes` its peak RSS
    (`wait4`'s ru_maxrss). `lost`: the zygote went away before saying how the run ended (its
    child then died by its parent-death signal); `stopped`: by `kill_running`."""

    def __init__(self, zygote: _Zygote, pid: int, pidfd: int | None) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.maxrss_bytes: int | None = None
        self.lost = False
        self.stopped = False
        self._zygote = zygote
        self._pidfd = pidfd
        self._ended = threading.Event()

    def wait_ended(self, timeout: float | None) -> bool:
        """Whether the zygote has said how the run ended (or gone away), waiting up to `timeout`."""
        return self._ended.wait(timeout)

    def poll(self) -> int | None:
        """`Popen.poll`: the return code once the run has ended, else None."""
        return self.returncode if self._ended.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        """`Popen.wait`: the return code, or `subprocess.TimeoutExpired` after `timeout`."""
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"forked worker {self.pid}", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def running(self) -> bool:
        """Whether the child has not ended yet (its pidfd not readable): a /proc reading made just
        before this says True was the child's (its pid was not reused meanwhile)."""
        if self._ended.is_set():
            return False
        if self._pidfd is None:
            return True
        poller = select.poll()
        poller.register(self._pidfd, select.POLLIN)
        try:
            return not poller.poll(0)
        except OSError:
            return False

    def stop(self) -> None:
        """Kill the child's group (through the zygote: the only process that knows its pid is
        still the child's), wait until it is reaped, let go of its pidfd."""
        if not self._ended.is_set():
            self._zygote.kill_child(self.pid)
            if not self._ended.wait(ZYGOTE_ANSWER_S):
                self._zygote.kill(stop=False)  # a zygote that does not answer: gone, its children with it
                self._ended.wait(ZYGOTE_ANSWER_S)
        self.close()

    def close(self) -> None:
        if self._pidfd is not None:
            try:
                os.close(self._pidfd)
            except OSError:
                pass
            self._pidfd = None

    def _end(self, status: int, maxrss_kib: int | None) -> None:
        try:
            self.returncode = os.waitstatus_to_exitcode(status)
        except ValueError:  # not the status of an ended process: its status is lost
            self.returncode = 255
        self.maxrss_bytes = None if maxrss_kib is None else maxrss_kib * 1024
        self._ended.set()

    def _lose(self, stopped: bool) -> None:
        self.lost, self.stopped = True, stopped
        self.returncode = -signal.SIGKILL
        self._ended.set()


class _Spawn:
    """A spawn waiting for the zygote's answer."""

    def __init__(self) -> None:
        self.answered = threading.Event()
        self.forked: Forked | None = None
        self.abandoned = False  # its caller stopped waiting (an exception): kill what comes


class _Zygote:
    """The runner's side of one zygote: its process, the socket, and the reader thread that
    started the process (its parent-death signal is tied to that thread) and dispatches the
    zygote's messages."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self.ready = threading.Event()
        self.failed = False  # could not be started: the runs go to fresh workers
        self.gone = False
        self.stopped = False  # by `kill_running`: nothing is to start
        self.last_used = time.monotonic()
        self._lock = threading.Lock()  # the tables, the flags and the process
        self._send_lock = threading.Lock()  # the socket's sends and its close
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._next_id = 0
        self._spawns: dict[int, _Spawn] = {}
        self._runs: dict[int, Forked] = {}
        self._thread = threading.Thread(target=self._serve, name="runner-zygote", daemon=True)
        self._thread.start()

    def busy(self) -> bool:
        with self._lock:
            return bool(self._spawns or self._runs)

    def spawn(
        self, entry: str, args: Sequence[str], memory_mib: int | None, env: Mapping[str, str], fds: Sequence[int]
    ) -> Forked | None:
        """Fork a run of `entry` (`FORK_ENTRIES`) with `fds` and `env` as its environment. None:
        the zygote cannot (gone, refused); `Stopped`: killed by `kill_running`."""
        waiter = _Spawn()
        with self._lock:
            if self.gone:
                if self.stopped:
                    raise Stopped
                return None
            request = self._next_id
            self._next_id += 1
            self._spawns[request] = waiter
        message = {
            "op": "spawn",
            "id": request,
            "entry": entry,
            "args": list(args),
            "memory_mib": memory_mib,
            "setenv": {k: v for k, v in env.items() if self.env.get(k) != v},
            "unsetenv": [k for k in self.env if k not in env],
        }
        data = json.dumps(message).encode()
        if len(data) > MESSAGE_BYTES or not self._send(data, fds):
            with self._lock:
                self._spawns.pop(request, None)
            return None
        self.last_used = time.monotonic()
        try:
            if not waiter.answered.wait(ZYGOTE_ANSWER_S):
                self.kill(stop=False)  # not answering: gone (its reader then answers every waiter)
                waiter.answered.wait(ZYGOTE_ANSWER_S)
        except BaseException:
            with self._lock:
                waiter.abandoned = True
                orphan = waiter.forked
            if orphan is not None:
                orphan.stop()
            raise
        if waiter.forked is None and self.stopped:
            raise Stopped
        return waiter.forked

    def kill_child(self, pid: int) -> None:
        """Ask the zygote to kill the group of its child `pid` (if it has not reaped it yet)."""
        self._send(json.dumps({"op": "kill", "pid": pid}).encode())

    def shutdown(self) -> None:
        """Close the runner's end for sending: the zygote kills its children and exits."""
        with self._send_lock:
            if self._sock is not None:
                try:
                    self._sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

    def kill(self, stop: bool = True) -> None:
        """Kill the zygote (its children die by their parent-death signal): the runs under way
        end at once, as stopped (`stop`: by `kill_running`), or lost (run again, fresh)."""
        with self._lock:
            self.stopped = self.stopped or stop
            if self._proc is not None and self._proc.returncode is None:
                kill_group(self._proc.pid)

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _send(self, data: bytes, fds: Sequence[int] = ()) -> bool:
        with self._send_lock:
            if self._sock is None or self.gone:
                return False
            try:
                if fds:
                    socket.send_fds(self._sock, [data], list(fds))
                else:
                    self._sock.send(data)
            except OSError:
                return False
            return True

    def _serve(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            try:
                with self._lock:
                    if self.stopped:
                        return
                    self._proc = subprocess.Popen(
                        [*ZYGOTE_COMMAND, str(theirs.fileno())],
                        pass_fds=(theirs.fileno(),),
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        env=self.env,
                        cwd=PROJECT_ROOT,
                        start_new_session=True,
                        preexec_fn=limits.child_setup(None),
                    )
            except (OSError, subprocess.SubprocessError):
                return
            finally:
                theirs.close()
            ours.settimeout(ZYGOTE_START_S)
            try:
                hello = json.loads(ours.recv(MESSAGE_BYTES) or b"{}")
            except (OSError, ValueError):
                hello = {}
            if not isinstance(hello, dict) or hello.get("op") != "ready":
                return
            ours.settimeout(None)
            with self._send_lock:
                self._sock = ours
            self.ready.set()
            while self._receive(ours):
                pass
        finally:
            self._finish(ours)

    def _receive(self, sock: socket.socket) -> bool:
        """One message of the zygote, dispatched; False when the zygote is gone."""
        received = receive(sock, 1)
        if received is None:
            return False
        message, fds = received
        try:
            ident: Any = message.get("id", message.get("pid"))
            op, key = message["op"], int(ident)
            status, maxrss = int(message.get("status", 0)), message.get("maxrss_kib")
            maxrss = maxrss if isinstance(maxrss, int) else None
        except (ValueError, KeyError, TypeError):
            op, key, status, maxrss = None, 0, 0, None
        orphan: Forked | None = None
        with self._lock:
            if op == "started":
                try:
                    forked = Forked(self, int(message["pid"]), fds.pop() if fds else None)
                except (ValueError, KeyError, TypeError):
                    forked = None
                waiter = self._spawns.pop(key, None)
                if forked is not None:
                    self._runs[forked.pid] = forked
                    if waiter is None or waiter.abandoned:
                        orphan = forked
                    elif waiter is not None:
                        waiter.forked = forked
                if waiter is not None:
                    waiter.answered.set()
            elif op == "refused":
                waiter = self._spawns.pop(key, None)
                if waiter is not None:
                    waiter.answered.set()
            elif op == "ended":
                ended = self._runs.pop(key, None)
                if ended is not None:
                    ended._end(status, maxrss)
        for fd in fds:
            os.close(fd)
        if orphan is not None:  # its caller gave up waiting: it must not run
            orphan.close()
            self.kill_child(orphan.pid)
        return True

    def _finish(self, sock: socket.socket) -> None:
        """The zygote is gone (or never came): every waiter answered, every run lost, the process
        killed (its group: itself) and reaped, the socket closed."""
        with self._lock:
            self.gone = True
            if not self.ready.is_set():
                self.failed = True
            spawns, self._spawns = list(self._spawns.values()), {}
            runs, self._runs = list(self._runs.values()), {}
            if self._proc is not None:
                if self._proc.returncode is None:
                    kill_group(self._proc.pid)
                self._proc.wait()
        with self._send_lock:
            self._sock = None
            sock.close()
        self.ready.set()
        for waiter in spawns:
            waiter.answered.set()
        for run in runs:
            run._lose(self.stopped)
        _forget_zygote(self)


_ZYGOTES: dict[_EnvKey, _Zygote] = {}
_ZYGOTES_LOCK = threading.Lock()
_DEATHS: dict[_EnvKey, int] = {}
_NOT_STARTED: set[_EnvKey] = set()
_STARTS = 0


def _env_key(env: Mapping[str, str]) -> _EnvKey:
    return tuple(sorted((k, v) for k, v in env.items() if k not in VOLATILE_ENV))


def _forget_zygote(zygote: _Zygote) -> None:
    key = _env_key(zygote.env)
    with _ZYGOTES_LOCK:
        if _ZYGOTES.get(key) is zygote:
            del _ZYGOTES[key]
        if zygote.stopped:
            return
        if zygote.failed:
            _NOT_STARTED.add(key)
        else:
            _DEATHS[key] = _DEATHS.get(key, 0) + 1
            if _DEATHS[key] >= MAX_DEATHS:
                _NOT_STARTED.add(key)


def fork(
    args: Sequence[str], *, memory_mib: int | None, env: Mapping[str, str], fds: Sequence[int], entry: str = "run"
) -> Forked | None:
    """Fork a worker from the zygote of `env` (started now if there is none): `run` (the
    default), a run of `runner.worker` (`args`: SPEC RESULT; the child's PROGRESS_FD is
    appended) with `fds` its stdout and stderr and its progress pipe; `serve`, the program pool's
    `runner.pool_worker` (`args`: the framework) with `fds` its stdin, stdout and stderr. The
    caller keeps its own copies of `fds` (and closes them). None: no zygote can do it (it
    could not be started, or it died): the caller starts a fresh worker instead. Raises
    `Stopped` when `kill_running` killed the zygote meanwhile (a stop signal: nothing is to
    start)."""
    if len(fds) != FORK_ENTRIES[entry]:
        raise ValueError(f"a {entry!r} fork takes {FORK_ENTRIES[entry]} descriptors, not {len(fds)}")
    zygote = _zygote_of(env)
    if zygote is None:
        return None
    zygote.ready.wait(ZYGOTE_START_S + ZYGOTE_ANSWER_S)
    if zygote.stopped:
        raise Stopped
    if zygote.gone or not zygote.ready.is_set():
        return None
    return zygote.spawn(entry, args, memory_mib, env, fds)


def _zygote_of(env: Mapping[str, str]) -> _Zygote | None:
    """The zygote of `env`, started now (it imports torch in the background) if there is none;
    None if one for `env` could not be started or died too often."""
    global _STARTS
    key = _env_key(env)
    with _ZYGOTES_LOCK:
        if key in _NOT_STARTED:
            return None
        zygote = _ZYGOTES.get(key)
        if zygote is None:
            idle = sorted((z for z in _ZYGOTES.values() if not z.busy()), key=lambda z: z.last_used)
            for old in idle[: max(0, len(_ZYGOTES) + 1 - MAX_ZYGOTES)]:
                del _ZYGOTES[_env_key(old.env)]
                old.shutdown()
            zygote = _ZYGOTES[key] = _Zygote(env)
            _STARTS += 1
        return zygote


def prestart(env: Mapping[str, str]) -> None:
    """Start the zygote of `env` now, without waiting for it: torch's import then overlaps
    whatever the caller does before its first `fork` (a pool starting its burn worker)."""
    _zygote_of(env)


def zygote_starts() -> int:
    """How many zygotes this process has started (for tests)."""
    return _STARTS


def shutdown_zygotes(timeout: float = 10.0) -> None:
    """Shut every zygote down (at exit; and before the test session's check that no process is
    left): each kills its children and exits; one that does not within `timeout` is killed."""
    with _ZYGOTES_LOCK:
        zygotes = list(_ZYGOTES.values())
        _ZYGOTES.clear()
    for zygote in zygotes:
        zygote.shutdown()
    deadline = time.monotonic() + timeout
    for zygote in zygotes:
        if not zygote.join(max(0.0, deadline - time.monotonic())):
            zygote.kill(stop=False)
            zygote.join(timeout)


def _after_fork_in_child() -> None:
    """A process forked from the runner (not exec'd) has none of its zygotes: their reader
    threads are not in it, and their sockets are the runner's."""
    global _ZYGOTES_LOCK
    _ZYGOTES_LOCK = threading.Lock()
    for zygote in _ZYGOTES.values():
        if zygote._sock is not None:
            try:
                os.close(zygote._sock.detach())
            except OSError:
                pass
    _ZYGOTES.clear()


atexit.register(shutdown_zygotes)
os.register_at_fork(after_in_child=_after_fork_in_child)
