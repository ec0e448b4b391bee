"""The torch interpreter: runs a program's IR with PyTorch on the CPU, one thread.

`run` returns the contract's result dict (`docs/program-ir.md` section 4):

- an op torch lacks (`without_autodiff`) is found before anything runs: outcome
  `unsupported`, naming the op;
- an exception at an op ends the program there: outcome `error` with the
  exception's type and message, the op's index and line, and the timed loop's
  iteration; what was observed and timed until then is kept;
- the timed loop (the first top-level `repeat`) records each iteration's wall
  time (`perf_counter`; the time `observe` takes to copy values is left out),
  samples the RSS every `rss_every` iterations outside the timed region, and at
  each checkpoint records the mean time since the previous one, the RSS and
  the `track` tensor's flags, and calls `progress(checkpoint)`;
- `observe` outside the timed loop records every time it runs; inside it, at
  checkpoint iterations only, with values and gradient at the loop's last
  iteration only (flags every time), or at every checkpoint with
  `every_checkpoint=True`.

`setup_ms` is the time to make the initial tensors and modules (from the IR
already validated to the first statement).

`first_iteration` runs a program only up to the end of its timed loop's first
iteration, that iteration inside a context manager of the caller's (the FLOP
count of `runner.program.flops`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import torch
from pydantic import ValidationError

from ..contract.ops import OPS
from ..errors import BadInput
from ..limits import looks_out_of_memory
from . import torch_modules, torch_ops
from .ir import Program, Stmt, timed_loop

Progress = Callable[[dict[str, Any]], None]
Result = dict[str, Any]


class GradIsNone(RuntimeError):
    """`grad(T)` of a tensor whose `.grad` is None."""


class _FirstIterationDone(Exception):
    """The timed loop's first iteration ran (`first_iteration`): the run stops there."""


class _Failed(Exception):
    def __init__(self, stmt: Stmt, error: Exception) -> None:
        super().__init__(str(error))
        self.stmt = stmt
        self.error = error


def rss_bytes() -> int | None:
    """VmRSS of this process from /proc/self/status, or None where it cannot be read."""
    try:
        with open("/proc/self/status", "rb") as f:
            for raw in f:
                if raw.startswith(b"VmRSS:"):
                    return int(raw.split()[1]) * 1024
    except OSError:
        return None
    return None


def flags(t: torch.Tensor) -> dict[str, Any]:
    """The contract's flags: `tracked` = requires_grad or grad_fn is not None; `raw`: torch's own."""
    rg = bool(t.requires_grad)
    fn = t.grad_fn
    return {
        "tracked": rg or fn is not None,
        "requires_grad": rg,
        "raw": {
            "requires_grad": rg,
            "grad_fn": type(fn).__name__ if fn is not None else None,
            "is_leaf": bool(t.is_leaf),
            "retains_grad": bool(t.retains_grad),
        },
    }


def held_grad(t: torch.Tensor) -> torch.Tensor | None:
    """`t.grad`, without torch's warning for a non-leaf that does not retain its gradient (None)."""
    if t.is_leaf or t.retains_grad:
        return t.grad
    return None


def _flat(t: torch.Tensor) -> list[float]:
    """The values as numbers (a mask's as 0 and 1, as the probe records them)."""
    flat = t.detach().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.int64)
    values: list[float] = flat.tolist()
    return values


class _Run:
    def __init__(self, program: Program, progress: Progress | None, dtype: torch.dtype) -> None:
        self.program = program
        self.progress = progress
        self.dtype = dtype
        self.env: dict[str, Any] = {}
        self.params: list[torch.Tensor] = []
        self.observations: list[dict[str, Any]] = []
        self.step_ms: list[float] = []
        self.checkpoints: list[dict[str, Any]] = []
        self.rss_samples: list[list[float]] = []
        self.iteration: int | None = None
        self.record = True
        self.last = True
        self.excluded = 0.0
        self.rss_start: int | None = None
        self.timed: Stmt | None = timed_loop(program.body)
        # `first_iteration`: the context the timed loop's first iteration runs in, then the run stops.
        self.first_only: AbstractContextManager[Any] | None = None

    # ---- setup --------------------------------------------------------------------------------

    def setup(self) -> None:
        env = self.env
        program = self.program
        # Modules as a port builds them (torch's own defaults for what the program omits); their
        # params and buffers then take the program's initial data.
        modules = {m.name: (m, torch_modules.build(m, self.dtype)) for m in program.modules}
        for m, module in modules.values():
            env[m.name] = module
        for decl in program.tensors:
            if decl.module is not None:
                m, module = modules[decl.module]
                t = torch_modules.tensor_of(module, m, decl.name)
                with torch.no_grad():
                    t.copy_(torch.tensor(decl.data, dtype=t.dtype).reshape(decl.shape))
                if decl.role == "param":
                    self.params.append(t)
                env[decl.name] = t
                continue
            # clone(): a tensor of its own, not a view of the flat one (torch's in-place errors differ).
            dtype = {"float": self.dtype, "int": torch.int64, "bool": torch.bool}[decl.dtype]
            t = torch.tensor(decl.data, dtype=self.dtype).reshape(decl.shape).to(dtype).clone()
            if decl.role == "param":
                t = t.requires_grad_()
                self.params.append(t)
            env[decl.name] = t

    # ---- execution ----------------------------------------------------------------------------

    def block(self, stmts: Sequence[Stmt]) -> None:
        env = self.env
        for st in stmts:
            op = st.op
            if op == "repeat":
                if st is self.timed:
                    self.timed_loop(st)
                else:
                    body = st.body
                    assert body is not None
                    for _ in range(st.integer("count")):
                        self.block(body)
                continue
            if op == "no_grad":
                assert st.body is not None
                with torch.no_grad():
                    self.block(st.body)
                continue
            fn = _IMPL.get(op) or torch_ops.IMPL.get(op) or torch_ops.call
            try:
                result = fn(self, st, [env[a] for a in st.args])
            except Exception as e:  # any failure at an op is the run's outcome
                if isinstance(e, MemoryError) or looks_out_of_memory(str(e)):
                    raise  # not the program's error: the run's memory ran out (the worker records `oom`)
                raise _Failed(st, e) from e
            if st.out is not None:
                env[st.out] = result

    def timed_loop(self, st: Stmt) -> None:
        body = st.body
        assert body is not None
        count = st.integer("count")
        if self.first_only is not None:
            # One iteration, as the timed loop's first runs, inside the caller's context; nothing
            # observed (no checkpoint), then the run stops.
            self.iteration, self.record, self.last = 1, False, count == 1
            with self.first_only:
                self.block(body)
            raise _FirstIterationDone
        settings = self.program.settings
        checkpoints = set(settings.checkpoints)
        rss_every = settings.rss_every
        rss_start = self.rss_start
        segment_start = 0
        perf = time.perf_counter
        step_ms = self.step_ms
        for k in range(1, count + 1):
            self.iteration = k
            self.record = k in checkpoints
            self.last = k == count
            self.excluded = 0.0
            started = perf()
            self.block(body)
            step_ms.append((perf() - started - self.excluded) * 1e3)
            if rss_every and k % rss_every == 0 and rss_start is not None:
                rss = rss_bytes()
                if rss is not None:
                    self.rss_samples.append([k, (rss - rss_start) / 2**20])
            if self.record:
                segment = step_ms[segment_start:]
                segment_start = len(step_ms)
                self.checkpoint(k, sum(segment) / len(segment))
        self.iteration = None
        self.record = True
        self.last = True

    def checkpoint(self, step: int, ms_per_step: float) -> None:
        track = self.program.settings.track
        kept = self.env.get(track) if track is not None else None
        f = flags(kept) if isinstance(kept, torch.Tensor) else None
        rss = rss_bytes()
        record: dict[str, Any] = {
            "step": step,
            "ms_per_step": ms_per_step,
            "rss_bytes": rss,
            "rss_delta_mib": (rss - self.rss_start) / 2**20 if rss is not None and self.rss_start is not None else None,
            "tracked": f["tracked"] if f is not None else None,
        }
        if f is not None:  # as the framework names them; absent without a tracked tensor
            record["flags"] = f["raw"]
        self.checkpoints.append(record)
        if self.progress is not None:
            self.progress(record)

    def observe(self, st: Stmt, t: torch.Tensor) -> None:
        if not self.record:
            return
        started = time.perf_counter()
        with_values = st.flag("values") and (self.last or st.flag("every_checkpoint"))
        grad = held_grad(t) if with_values else None
        self.observations.append(
            {
                "label": st.text("label"),
                "tensor": st.args[0],
                "op_index": st.index,
                "iteration": self.iteration,
                "shape": list(t.shape),
                "values": _flat(t) if with_values else None,
                "grad": _flat(grad) if grad is not None else None,
                "flags": flags(t),
            }
        )
        if self.iteration is not None:
            self.excluded += time.perf_counter() - started

    # ---- the whole run ------------------------------------------------------------------------

    def result(self, outcome: str, failure: dict[str, Any] | None, setup_ms: float) -> Result:
        return {
            "outcome": outcome,
            "failure": failure,
            "observations": self.observations,
            "step_ms": self.step_ms,
            "checkpoints": self.checkpoints,
            "rss_samples": self.rss_samples,
            "setup_ms": setup_ms,
        }

    def run(self) -> Result:
        for st in self.program.statements():
            spec = OPS[st.op]
            if not spec.supports("torch"):
                failure = {
                    "op_index": st.index,
                    "op": st.op,
                    "line": st.line,
                    "iteration": None,
                    "message": f"torch does not support `{st.op}` {spec.torch.removeprefix('unsupported').strip()}",
                }
                return self.result("unsupported", failure, 0.0)
        self.rss_start = rss_bytes() if self.timed is not None else None
        started = time.perf_counter()
        self.setup()
        setup_ms = (time.perf_counter() - started) * 1e3
        try:
            with torch.enable_grad():
                self.block(self.program.body)
        except _Failed as f:
            st, e = f.stmt, f.error
            failure = {
                "op_index": st.index,
                "op": st.op,
                "line": st.line,
                "iteration": self.iteration,
                "message": str(e),
                "type": type(e).__name__,
            }
            return self.result("error", failure, setup_ms)
        return self.result("ok", None, setup_ms)


# ---- the operations -----------------------------------------------------------------------------

Impl = Callable[[_Run, Stmt, list[Any]], Any]


def _grad(run: _Run, st: Stmt, a: list[Any]) -> torch.Tensor:
    g = held_grad(a[0])
    if g is None:
        raise GradIsNone(f"grad({st.args[0]}): the tensor has no gradient (torch's .grad is None)")
    return g


def _backward(run: _Run, st: Stmt, a: list[Any]) -> None:
    a[0].backward(retain_graph=st.flag("retain_graph"))


def _linear(run: _Run, st: Stmt, a: list[Any]) -> torch.Tensor:
    m: torch.nn.Linear = a[0]
    return torch.nn.functional.linear(a[1], m.weight, m.bias)


def _observe(run: _Run, st: Stmt, a: list[Any]) -> None:
    run.observe(st, a[0])


def _item(run: _Run, st: Stmt, a: list[Any]) -> None:
    a[0].item()


def _retain_grad(run: _Run, st: Stmt, a: list[Any]) -> None:
    a[0].retain_grad()


def _add_scalar_(run: _Run, st: Stmt, a: list[Any]) -> None:
    a[0].add_(st.number("scalar"))


def _freeze(run: _Run, st: Stmt, a: list[Any]) -> None:
    a[0].requires_grad_(False)


def _zero_grad(run: _Run, st: Stmt, a: list[Any]) -> None:
    a[0].zero_grad()


_IMPL: dict[str, Impl] = {
    "detach": lambda r, s, a: a[0].detach(),
    "require_grad": lambda r, s, a: a[0].requires_grad_(),
    "retain_grad": _retain_grad,
    "clone": lambda r, s, a: a[0].clone(),
    "add": lambda r, s, a: a[0] + a[1],
    "sub": lambda r, s, a: a[0] - a[1],
    "mul": lambda r, s, a: a[0] * a[1],
    "div": lambda r, s, a: a[0] / a[1],
    "neg": lambda r, s, a: -a[0],
    "matmul": lambda r, s, a: a[0] @ a[1],
    "transpose": lambda r, s, a: a[0].transpose(-2, -1),
    "add_scalar": lambda r, s, a: a[0] + s.number("scalar"),
    "mul_scalar": lambda r, s, a: a[0] * s.number("scalar"),
    "powi": lambda r, s, a: a[0].pow(s.integer("exponent")),
    "exp": lambda r, s, a: torch.exp(a[0]),
    "log": lambda r, s, a: torch.log(a[0]),
    "sqrt": lambda r, s, a: torch.sqrt(a[0]),
    "abs": lambda r, s, a: torch.abs(a[0]),
    "tanh": lambda r, s, a: torch.tanh(a[0]),
    "relu": lambda r, s, a: torch.relu(a[0]),
    "sigmoid": lambda r, s, a: torch.sigmoid(a[0]),
    "sum": lambda r, s, a: a[0].sum(),
    "mean": lambda r, s, a: a[0].mean(),
    "sum_dim": lambda r, s, a: a[0].sum(s.integer("dim"), keepdim=True),
    "reshape": lambda r, s, a: a[0].reshape(s.ints("shape")),
    "item": _item,
    "add_scalar_": _add_scalar_,
    "linear": _linear,
    "backward": _backward,
    "grad": _grad,
    "zero_grad": _zero_grad,
    "freeze": _freeze,
    "observe": _observe,
}
"""The first operations torch supports but the blocks (`repeat`, `no_grad`: `_Run.block` runs them);
the families' (optimizers and `step` included) are in `torch_ops`."""

IMPLEMENTED = frozenset(_IMPL) | torch_ops.implemented() | {"repeat", "no_grad"}


def _program(program: Program | dict[str, Any]) -> Program:
    if isinstance(program, Program):
        return program
    try:
        return Program.model_validate(program)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        raise BadInput(f"program IR{' at ' + where if where else ''}: {err.get('msg', e)}") from None


def _one_thread() -> None:
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def run(
    program: Program | dict[str, Any], progress: Progress | None = None, dtype: torch.dtype = torch.float32
) -> Result:
    """Runs the program; the contract's result dict. `dtype=torch.float64` runs it in double precision
    (the same initial values). An IR dict that is not valid is `BadInput`."""
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype: torch.float32 or torch.float64, not {dtype}")
    p = _program(program)
    _one_thread()
    return _Run(p, progress, dtype).run()


def first_iteration(
    program: Program | dict[str, Any], within: AbstractContextManager[Any], dtype: torch.dtype = torch.float32
) -> bool:
    """Runs the program's setup and its statements up to the timed loop, then the loop's first
    iteration inside `within`, and stops. True if that iteration ran to its end; False if the
    program has no timed loop, uses an operation torch lacks, or fails before or in it."""
    p = _program(program)
    if timed_loop(p.body) is None or any(not OPS[st.op].supports("torch") for st in p.statements()):
        return False
    _one_thread()
    run = _Run(p, None, dtype)
    run.first_only = within
    run.setup()
    try:
        with torch.enable_grad():
            run.block(p.body)
    except _FirstIterationDone:
        return True
    except _Failed:
        return False
    return False


def run_batch(programs: Iterable[Program | dict[str, Any]], dtype: torch.dtype = torch.float32) -> list[Result]:
    """Runs many programs one after the other in this process."""
    return [run(p, None, dtype) for p in programs]
