"""The fork server ("zygote") of torch's semantic runs and pool workers: `python3 -m runner.zygote SOCKET_FD`.

A torch worker spends seconds importing torch before a run that often takes a tenth of one.
This process imports torch and the torch adapters once, runs no torch op (so no thread pool,
no allocator state, nothing a fork could break), and then forks one child per run, on
request, over the Unix socket SOCKET_FD (SOCK_SEQPACKET, the protocol in `runner.workers`).
Each child is the run's worker process (or the program pool's long-lived torch worker) as a
fresh one would be, started in tens of milliseconds instead:

- it makes a session of its own (`setsid`: its group is what a kill of the run kills), caps
  its address space (RLIMIT_AS) and dies with the zygote (PR_SET_PDEATHSIG; if the zygote is
  already gone, it exits): `runner.limits.child_setup`, as a fresh worker does between fork
  and exec;
- its environment is the request's (the zygote's, which has the worker environment of
  `runner.workers.environment` from its start, glibc's malloc settings included, with the
  request's difference applied);
- it runs the request's entry (`runner.workers.FORK_ENTRIES`) and exits with what a fresh
  `python3 -m MODULE` would (0; 1 and the traceback on stderr for an exception that escapes it):
  `run`, `runner.worker.main` with the first descriptor the request passed as its stdout and
  stderr and the second as its PROGRESS_FD; `serve`, `runner.pool_worker.main` with the three
  descriptors as its stdin, stdout and stderr.

The zygote reaps its children, each through a pidfd: when one ends it kills the child's
process group first (whatever the run started dies with it, and the group id cannot be reused
while the runner might still ask to kill it), reaps it (`wait4`) and sends its wait status and
ru_maxrss. A `kill` request kills the group of a child not reaped yet, and nothing else. When
the runner's end closes (shut down, or the runner gone) it kills every child's group, reaps
them and exits. It refuses to serve (and the runs go to fresh workers) when importing torch
left a thread behind: a fork copies only the thread that forks.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import select
import signal
import socket
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from . import limits, pool_worker, worker
from .frameworks import ADAPTERS, FORKED_FRAMEWORK
from .workers import FORK_ENTRIES, receive

# Imported by torch on first use, seconds each, so once here rather than in every forked run:
# `torch._dynamo`, which the first optimizer a process makes imports (torch 2.15: 1.2 s of a
# forked training run that took 1.5-3 s; it starts no thread).
LAZY_IMPORTS = ("torch._dynamo",)


def prepare() -> str | None:
    """Import torch's adapters (torch with them) and what torch imports on first use, and run
    nothing. The reason not to fork, or None."""
    for adapter in ADAPTERS.values():
        if adapter.framework == FORKED_FRAMEWORK:
            importlib.import_module(adapter.module)
    for module in LAZY_IMPORTS:
        importlib.import_module(module)
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        return "the threads of this process cannot be counted (no /proc)"
    if threads != 1:
        return f"{threads} threads after importing torch (a fork copies one)"
    gc.freeze()  # what the import made stays out of the children's collections (and their pages shared)
    return None


def _kill(pid: int) -> None:
    """Kill a child not reaped yet, and its group (once it has made one: right after the fork,
    the child is in the zygote's group still)."""
    for kill, target in ((os.kill, pid), (os.killpg, pid)):
        try:
            kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _exit_code(main: Callable[[list[str]], Any], argv: list[str]) -> int:
    """`main(argv)`, ended as `sys.exit(main(argv))` ends a fresh interpreter."""
    try:
        status: Any = main(argv)
    except SystemExit as exit_:
        status = exit_.code
    except BaseException:
        traceback.print_exc()
        return 1
    if status is None:
        return 0
    if isinstance(status, int):
        return status
    print(status, file=sys.stderr)
    return 1


def _close(fds: Sequence[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


class Server:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.children: dict[int, int] = {}  # pid -> pidfd
        self.pids: dict[int, int] = {}  # pidfd -> pid
        self.poller = select.poll()
        self.poller.register(sock.fileno(), select.POLLIN)

    def serve(self) -> int:
        while True:
            for fd, _events in self.poller.poll():
                if fd == self.sock.fileno():
                    if not self.request():
                        self.kill_all()
                        return 0
                elif fd in self.pids:
                    self.reap(self.pids[fd])

    def send(self, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
        try:
            socket.send_fds(self.sock, [json.dumps(message).encode()], list(fds))
        except OSError:
            pass  # the runner is gone: its end reads as closed next

    def request(self) -> bool:
        """One request served; False when the runner's end is closed."""
        received = receive(self.sock, max(FORK_ENTRIES.values()))
        if received is None:
            return False
        message, fds = received
        op, entry = message.get("op"), message.get("entry", "run")
        if op == "spawn" and entry in FORK_ENTRIES and len(fds) == FORK_ENTRIES[entry]:
            self.spawn(message, entry, fds)
            return True
        _close(fds)
        if op == "spawn":
            wanted = (
                f"{FORK_ENTRIES[entry]} descriptors" if entry in FORK_ENTRIES else f"an entry of {sorted(FORK_ENTRIES)}"
            )
            self.send({"op": "refused", "id": message.get("id"), "why": f"expected {wanted}"})
        elif op == "kill" and message.get("pid") in self.children:
            _kill(message["pid"])
        return True

    def spawn(self, message: dict[str, Any], entry: str, fds: list[int]) -> None:
        request = message.get("id")
        args, memory_mib = message.get("args"), message.get("memory_mib")
        setenv, unsetenv = message.get("setenv") or {}, message.get("unsetenv") or []
        valid = (
            isinstance(args, list)
            and all(isinstance(a, str) for a in args)
            and (memory_mib is None or (isinstance(memory_mib, int) and memory_mib > 0))
            and isinstance(setenv, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in setenv.items())
            and isinstance(unsetenv, list)
            and all(isinstance(k, str) for k in unsetenv)
        )
        if not valid:
            _close(fds)
            self.send({"op": "refused", "id": request, "why": "not a spawn request"})
            return
        setup = limits.child_setup(memory_mib)
        _flush()
        try:
            pid = os.fork()
        except OSError as err:
            _close(fds)
            self.send({"op": "refused", "id": request, "why": f"fork: {err}"})
            return
        if pid == 0:
            self.child(setup, entry, [*map(str, args or [])], fds, setenv, unsetenv)
        _close(fds)
        try:
            pidfd = os.pidfd_open(pid)
        except OSError as err:
            _kill(pid)
            os.waitpid(pid, 0)
            self.send({"op": "refused", "id": request, "why": f"pidfd_open: {err}"})
            return
        self.children[pid] = pidfd
        self.pids[pidfd] = pid
        self.poller.register(pidfd, select.POLLIN)
        self.send({"op": "started", "id": request, "pid": pid}, [pidfd])

    def child(
        self, setup: Any, entry: str, args: list[str], fds: list[int], setenv: dict[str, str], unsetenv: list[str]
    ) -> NoReturn:
        """The run's process: what a fresh worker is between fork and exec, then the worker."""
        code = 1
        try:
            os.setsid()
            setup()
            self.sock.close()
            for pidfd in self.pids:
                os.close(pidfd)
            if entry == "serve":  # the pool's worker: its stdin, stdout and stderr
                for target, fd in enumerate(fds):
                    os.dup2(fd, target)
                main, module, argv = pool_worker.main, pool_worker.__file__, args
            else:  # a run: its output as stdout and stderr, and its progress pipe
                output, progress = fds
                os.dup2(output, 1)
                os.dup2(output, 2)
                fds = [output]
                main, module, argv = worker.main, worker.__file__, [*args, str(progress)]
            _close(fds)
            for key in unsetenv:
                os.environ.pop(key, None)
            os.environ.update(setenv)
            sys.argv = [module, *argv]
            code = _exit_code(main, argv)
        except BaseException:
            try:
                traceback.print_exc()
            except BaseException:
                pass
        finally:
            _flush()
            os._exit(code)

    def reap(self, pid: int) -> None:
        """A child ended: its group killed, it reaped, its status sent."""
        pidfd = self.children.pop(pid)
        del self.pids[pidfd]
        self.poller.unregister(pidfd)
        _kill(pid)
        _pid, status, usage = os.wait4(pid, 0)
        os.close(pidfd)
        self.send({"op": "ended", "pid": pid, "status": status, "maxrss_kib": usage.ru_maxrss})

    def kill_all(self) -> None:
        for pid in self.children:
            _kill(pid)
        for pid, pidfd in self.children.items():
            os.waitpid(pid, 0)
            os.close(pidfd)
        self.children.clear()
        self.pids.clear()


def main(argv: list[str]) -> int:
    sock = socket.socket(fileno=int(argv[0]))
    problem = prepare()
    if problem is not None:
        sock.send(json.dumps({"op": "refused", "why": problem}).encode())
        return 1
    sock.send(json.dumps({"op": "ready", "pid": os.getpid()}).encode())
    return Server(sock).serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
