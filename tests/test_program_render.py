"""Rendered PyTorch scripts reproduce the interpreter's observations when run on their own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from runner import noise, workers
from runner.program import torch_interp
from runner.program.data import materialize
from runner.program.ir import Settings, same_values
from runner.program.render_torch import render
from runner.program.syntax import parse

PROGRAMS = {
    "p10": (
        """\
lin = Linear(16, 16)
x = input(8, 16)
opt = sgd(lr=1e-3)
ema = detach(lin.weight)
for step in range(20):
    out = lin(x)
    loss = mean((out - x @ transpose(ema)) ** 2)
    zero_grad(opt)
    backward(loss)
    step(opt)
    ema = ema * 0.99 + detach(lin.weight) * 0.01
    observe(ema, values=False)
    observe(lin.bias)
observe(lin.weight)
""",
        Settings(checkpoints=[1, 10, 20], track="ema"),
    ),
    "everything": (
        """\
w = param(3, 4, init="uniform")
p = param(3, 4, init="positive")
v = param(4, values=[1, -2, 0.5, 3])
lin = Linear(4, 2, bias=False)
x = input(5, 4)
opt = adam(lr=0.01, beta1=0.8)
sg = sgd(lr=0.1, momentum=0.5)
for i in range(3):
    h = relu(lin(x * v)) + sigmoid(sum_dim(x, 1))
    q = log(p) * sqrt(p) / p - abs(w) ** 2 + exp(tanh(w)) + v
    r = reshape(transpose(q), [6, 2]) @ transpose(h)
    s = mean(r) + sum(clone(q)) * 0.5 - 1.0
    retain_grad(q)
    zero_grad(opt)
    backward(s, retain_graph=True)
    observe(q, "q")
    step(opt)
    item(s)
with no_grad():
    k = w * 2.0
    observe(k)
d = detach(w)
add_scalar_(d, 0.5)
observe(w, "w after the alias changed")
g = grad(p)
observe(g)
freeze(p)
zero_grad(sg)
backward(sum(-w * p))
step(sg)
observe(p)
observe(w, values=False)
""",
        Settings(checkpoints=[2, 3]),
    ),
    # a warm-up then a cosine decay (SequentialLR), and a weight observed at every checkpoint
    "schedules": (
        """\
lin = Linear(3, 2)
x = input(4, 3)
opt = sgd(lr=0.1)
warm = linear_lr(opt, start_factor=0.2, total_iters=3)
cos = cosine_lr(opt, 5)
sched = sequential_lr(opt, warm, cos, milestones=[3])
for i in range(8):
    loss = mean(lin(x) ** 2)
    zero_grad(opt)
    backward(loss)
    observe(lin.weight, "w", every_checkpoint=True)
    observe(lin.bias, "b")
    step(opt)
    sched_step(sched)
observe(lin.weight)
""",
        Settings(checkpoints=[1, 4, 8]),
    ),
    "nan": (
        "a = input(3, values=[-1, 0, 2])\nb = log(a)\nobserve(b)\n",
        None,
    ),
}


# Runs scripts as `python3 SCRIPT` would, but with torch imported once: a process prepares as
# runner.zygote does (`zygote.prepare`: torch and what torch imports on first use, no torch op run,
# so no thread pool and nothing a fork could break; one thread everywhere, `noise.THREAD_VARS`, or
# numpy's OpenBLAS starts one at import). It then forks a child per script that runs it as
# __main__ in a namespace of its own (the script's own `import torch` finds the module loaded),
# its stdout and stderr in SCRIPT.out and SCRIPT.err; where the zygote would refuse to fork (a
# thread left behind), each child execs `python3 SCRIPT` instead. Prints each script's exit code
# (a fresh interpreter's: 1 and the traceback for an exception that escapes it).
RUN_FORKED = """\
import os, runpy, sys, traceback
from runner import zygote
fork_safe = zygote.prepare() is None
children = {}
for script in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            for fd, suffix in ((1, ".out"), (2, ".err")):
                os.dup2(os.open(script + suffix, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
            if not fork_safe:
                os.execv(sys.executable, [sys.executable, script])
            sys.argv = [script]
            sys.path[0] = os.path.dirname(script)
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    children[pid] = script
for pid, script in children.items():
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def run_scripts(scripts: list[Path]) -> list[tuple[int, str, str]]:
    """Each script's exit code, stdout and stderr, the scripts run side by side (`RUN_FORKED`)."""
    env = {**workers.environment(noise.Controls()), **dict.fromkeys(noise.THREAD_VARS, "1")}
    done = subprocess.run(
        [sys.executable, "-c", RUN_FORKED, *map(str, scripts)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    codes = [int(line) for line in done.stdout.split()]
    assert len(codes) == len(scripts), done.stdout
    return [
        (code, Path(f"{script}.out").read_text(), Path(f"{script}.err").read_text())
        for code, script in zip(codes, scripts)
    ]


F64_SOURCE = "a = param(3)\nb = exp(a) / 3.0\nobserve(b)\n"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Every rendered script (and the float64 one of `F64_SOURCE`), run at once: its printed
    observations."""
    folder = tmp_path_factory.mktemp("rendered")
    programs = {
        name: materialize(parse(source, where=name), 7, settings) for name, (source, settings) in PROGRAMS.items()
    }
    scripts = {}
    for name, program in programs.items():
        scripts[name] = folder / f"{name}.py"
        scripts[name].write_text(render(program, title=f"test program {name}"))
    programs["f64"] = materialize(parse(F64_SOURCE, where="t"), 1)
    scripts["f64"] = folder / "f64.py"
    scripts["f64"].write_text(render(programs["f64"], dtype="float64"))
    results = {}
    for name, (code, out, err) in zip(scripts, run_scripts(list(scripts.values()))):
        assert code == 0, (name, err)
        results[name] = (programs[name], [json.loads(line) for line in out.splitlines()])
    return results


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_rendered_script_prints_the_interpreters_observations(outputs, name):
    program, printed = outputs[name]
    result = torch_interp.run(program)
    assert result["outcome"] == "ok", result["failure"]
    expected = result["observations"]
    assert len(printed) == len(expected)
    for got, want in zip(printed, expected):
        for key in ("values", "grad"):
            assert same_values(got.pop(key), want[key]), (name, want["label"], key)
        assert got == {k: v for k, v in want.items() if k not in ("values", "grad")}


def test_rendered_script_uses_the_torch_spellings():
    program = materialize(parse(PROGRAMS["p10"][0], where="p10"), 0, PROGRAMS["p10"][1])
    text = render(program)
    for line in [
        "lin = torch.nn.Linear(16, 16, bias=True, dtype=_DTYPE)",
        "opt = torch.optim.SGD(_params, lr=0.001)",
        "ema = lin.weight.detach()  # [1] line 4",
        "    _t1 = ema.transpose(-2, -1)  # [4] line 7",
        "    loss.backward()  # [10] line 9",
        "    _t5 = ema * 0.99  # [12] line 11",
    ]:
        assert "    " + line in text, line
    compile(text, "rendered", "exec")
    assert "torch.float64" in render(program, dtype="float64")
    schedules = render(materialize(parse(PROGRAMS["schedules"][0], where="s"), 0, PROGRAMS["schedules"][1]))
    for line in [
        "sched = torch.optim.lr_scheduler.SequentialLR(opt, schedulers=[warm, cos], milestones=[3])  # [3] line 6",
        '_observe("w", "lin.weight", 10, _it, lin.weight, True)',
        '_observe("b", "lin.bias", 11, _it, lin.bias, _it == 8)',
    ]:
        assert line in schedules, line


def test_render_refuses_what_torch_lacks():
    program = materialize(parse("a = param(2)\nb = without_autodiff(a)\n", where="t"), 0)
    with pytest.raises(ValueError, match="torch has no `without_autodiff`"):
        render(program)


def test_render_in_float64_matches_the_float64_interpreter(outputs):
    program, printed = outputs["f64"]
    (observation,) = printed
    assert observation["values"] == torch_interp.run(program, dtype=torch.float64)["observations"][0]["values"]
