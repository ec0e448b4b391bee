"""Any valid program name makes reproducers that work: names that are keywords of Rust or Python,
builtins, or names the generated code uses itself (`PENDING`, `print_pending`, `model`, `torch`,
...), and names that differ only by a `_` (`fn`, `fn_`) or that an unread variable's `_x` could
meet (`t1` beside the temporary `_t1`).

The fast properties (hypothesis) hold the identifier maps injective and clear of the reserved
names, and run the PyTorch script in this process against the torch interpreter. The cargo test
renders one program holding every hostile name at once and a few drawn ones as the modules of one
crate, under hostile member names (`main`, `lib`, `bin`, a quote and a line break), builds it once
and holds each run to the burn interpreter's."""

from __future__ import annotations

import contextlib
import io
import json
import keyword
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_program_render_rust import agreement
from tools import require_tool

from runner.paths import PROJECT_ROOT, cache_dir, target_dir
from runner.program import render_torch, torch_interp
from runner.program.ir import USER_NAME, Program, same_values
from runner.program.rust.crate import MODULE_RESERVED, render, write_bundle
from runner.program.rust.names import (
    DERIVE_LOCALS,
    FIELD_RESERVED,
    IN_SCOPE,
    LOCAL_RESERVED,
    OWN_NAMES,
    RUST_KEYWORDS,
    RustNames,
    unread,
)
from runner.program.rust.output import read_run

PYTHON_NAMES = {"torch", "json", "main", "print", "range", "list", "len", "type", "id", "input", "sum", "abs", "exit"}
SUFFIXED = {"fn_", "fn__", "model_", "model__", "device_", "PENDING_", "type_", "self_", "it_2", "grads_2", "x_2"}
UNDERSCORED = {"t1", "t2", "t3"}  # an unread `t1` is written `_t1`: the program's temporaries are `_t1`, ...
CASES = {"a_b", "A_B", "a__b", "ab", "AB", "W", "w", "lin", "LIN"}  # statics of data.rs upper-case their names
HOSTILE = sorted(
    n
    for n in RUST_KEYWORDS
    | OWN_NAMES
    | IN_SCOPE
    | DERIVE_LOCALS
    | set(keyword.kwlist)
    | set(keyword.softkwlist)
    | PYTHON_NAMES
    | SUFFIXED
    | UNDERSCORED
    | CASES
    if USER_NAME.fullmatch(n)
)
RUST_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SLOTS = 13
"""Names the program template gives a role each (module, params, input, optimizer, values)."""


def _data(n: int, k: int) -> list[float]:
    return [((i * 7 + k) % 11 - 5) / 10 for i in range(n)]


def hostile_program(names: list[str]) -> Program:
    """A program whose every name comes from `names` (distinct, at least `SLOTS`): a Linear, two
    params and an input large enough for `data.rs`, an optimizer, a timed loop with a carried
    (tracked) value, a gradient, observations in and after the loop; every further name a
    param (a field), an input or a value after the loop, observed."""
    assert len(names) >= SLOTS and len(set(names)) == len(names)
    mod, w, x, v, opt, h, y, s, q, loss, d, ema, g = names[:SLOTS]
    tensors: list[dict[str, Any]] = [
        {"name": f"{mod}.weight", "role": "param", "shape": [9, 8], "data": _data(72, 1), "module": mod},
        {"name": f"{mod}.bias", "role": "param", "shape": [9], "data": _data(9, 2), "module": mod},
        {"name": w, "role": "param", "shape": [9, 9], "data": _data(81, 3)},
        {"name": x, "role": "input", "shape": [9, 8], "data": _data(72, 4)},
        {"name": v, "role": "param", "shape": [9], "data": _data(9, 5)},
    ]
    body: list[dict[str, Any]] = []
    index = 0

    def stmt(op: str, args: list[str], out: str | None = None, into: list[dict[str, Any]] | None = None, **attrs: Any):
        nonlocal index
        s = {"index": index, "line": index + 1, "op": op, "args": args, "attrs": attrs}
        if out is not None:
            s["out"] = out
        index += 1
        (body if into is None else into).append(s)
        return s

    stmt("sgd", [], opt, lr=0.1)
    stmt("detach", [w], ema)
    loop = stmt("repeat", [], None, count=3)
    inner: list[dict[str, Any]] = []
    loop["body"] = inner
    stmt("linear", [mod, x], h, inner)
    stmt("matmul", [h, w], y, inner)
    stmt("mul_scalar", [y], s, inner, scalar=0.5)
    stmt("mul", [s, s], q, inner)
    stmt("mean", [q], loss, inner)
    stmt("zero_grad", [opt], None, inner)
    stmt("backward", [loss], None, inner)
    stmt("grad", [w], g, inner)
    stmt("observe", [g], None, inner)
    stmt("step", [opt], None, inner)
    stmt("mul_scalar", [ema], "_t1", inner, scalar=0.9)
    stmt("detach", [w], "_t2", inner)
    stmt("mul_scalar", ["_t2"], "_t3", inner, scalar=0.1)
    stmt("add", ["_t1", "_t3"], ema, inner)
    stmt("observe", [ema], None, inner, values=False)
    stmt("detach", [h], d)
    stmt("observe", [d])
    stmt("observe", [f"{mod}.weight"])
    stmt("freeze", [v])
    stmt("observe", [v])
    previous = d
    for i, name in enumerate(names[SLOTS:]):
        if i % 3 == 0:
            tensors.append({"name": name, "role": "param", "shape": [2], "data": _data(2, i)})
            stmt("observe", [name])
        elif i % 3 == 1:
            tensors.append({"name": name, "role": "input", "shape": [2], "data": _data(2, i)})
            stmt("observe", [name])
        else:
            stmt("mul_scalar", [previous], name, scalar=2.0)
            previous = name
    if previous != d:
        stmt("observe", [previous])
    return Program.model_validate(
        {
            "tensors": tensors,
            "modules": [{"name": mod, "kind": "linear", "attrs": {"d_in": 8, "d_out": 9}}],
            "body": body,
            "settings": {"checkpoints": [1, 3], "track": ema},
        }
    )


NAME = st.one_of(st.sampled_from(HOSTILE), st.from_regex(USER_NAME, fullmatch=True))
NAME_SETS = st.lists(NAME, min_size=SLOTS, max_size=SLOTS + 12, unique=True)


def _distinct(mapping: dict[str, str]) -> bool:
    return len(set(mapping.values())) == len(mapping)


# ---- the identifier maps ------------------------------------------------------------------------


def test_the_reserved_sets_hold_the_known_hazards():
    """What breaks a crate if a name is written as is (each one seen to fail rustc or the derive)."""
    strict = {"fn", "type", "self", "Self", "crate", "super", "match", "move", "ref", "async", "dyn", "gen", "try"}
    in_main = {"PENDING", "print_pending", "CHECKPOINTS", "LAST", "observe", "observe_transposed", "checkpoint"}
    own_locals = {"model", "device", "grads", "grads_sum", "newest_grads", "fresh", "acc", "it", "grad_tmp"}
    prelude = {"drop", "Some", "None", "Ok", "Err", "Tensor", "Model"}
    derive = {"device", "devices", "mapper", "PENDING", "CHECKPOINTS", "LAST", "Some", "None", "Ok", "Err"}
    assert strict | in_main | own_locals | prelude <= LOCAL_RESERVED
    assert strict | derive <= FIELD_RESERVED
    assert "model" not in FIELD_RESERVED  # a field: `model.model` is no clash
    python = {"lambda", "class", "None", "True", "torch", "json", "main", "print", "range", "list", "type"}
    assert python <= render_torch.RESERVED


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NAME_SETS)
def test_the_rust_identifier_maps_are_injective_and_avoid_the_reserved_names(names):
    p = hostile_program(names)
    rust = RustNames(p)
    local, field = rust.local.given(), rust.field.given()
    assert set(local) >= {n for n in names if n != names[0]} and names[0] in field
    for mapping, reserved in ((local, LOCAL_RESERVED), (field, FIELD_RESERVED)):
        assert _distinct(mapping)
        for ident in mapping.values():
            assert RUST_IDENT.fullmatch(ident) and ident not in reserved, ident
    # an unread variable is written `_x`: no written form of one name is another's
    forms = [{ident, unread(ident)} for ident in local.values()]
    assert sum(len(f) for f in forms) == len(set().union(*forms))
    statics = {t.name: rust.static(t.name) for t in p.tensors}
    assert _distinct(statics) and all(RUST_IDENT.fullmatch(c) and c == c.upper() for c in statics.values())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NAME_SETS)
def test_the_torch_identifier_map_is_injective_and_avoids_the_reserved_names(names):
    ids = render_torch.identifiers(hostile_program(names))
    assert set(ids) >= set(names) and _distinct(ids)
    for ident in ids.values():
        assert ident.isidentifier() and ident not in render_torch.RESERVED, ident


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NAME_SETS)
def test_no_rust_variable_is_bound_to_a_reserved_name(names):
    main = render(hostile_program(names))["src/main.rs"]
    bound = re.findall(r"\blet (?:mut )?([A-Za-z_][A-Za-z0-9_]*)\b", main) + re.findall(r"\bfor (\w+) in\b", main)
    own = {"device", "model", "grads", "grads_sum", "newest_grads", "grad_tmp", "fresh", "acc", "it", "report_panic"}
    for ident in bound:
        base = ident.removeprefix("_") if ident.removeprefix("_") in own else ident
        assert base in own or base == "_" or base not in LOCAL_RESERVED, ident
    fields = re.search(r"struct Model \{\n(.*?)\n\}", main, re.DOTALL)
    assert fields is not None
    assert not {line.strip().split(":")[0] for line in fields.group(1).splitlines()} & FIELD_RESERVED


def test_fn_and_fn_underscore_are_two_fields_and_pending_is_a_variable_of_its_own():
    p = hostile_program(["lin", "fn", "x", "fn_", "opt", "PENDING", "print_pending", "s", "q", "loss", "d", "e", "g"])
    main = render(p)["src/main.rs"]
    assert "    fn_: Param<Tensor<2>>," in main and "    fn__: Param<Tensor<1>>," in main
    assert "let mut PENDING_ = Tensor::<2>::empty(" in main and "let print_pending_ = PENDING_.clone()" in main
    assert "print_pending(true);" in main and "static PENDING:" in main


def test_a_title_with_line_breaks_stays_one_comment_line():
    main = render(hostile_program(HOSTILE[:SLOTS]), title="a\rb\nc\x00d\te")["src/main.rs"]
    assert main.splitlines()[0] == "//! a b c d\te"


def test_python_keywords_and_the_scripts_own_names_are_renamed_in_the_torch_script():
    p = hostile_program(
        ["torch", "lambda", "json", "lambda_", "main", "print", "range", "s", "q", "loss", "d", "e", "g"]
    )
    script = render_torch.render(p)
    for line in [
        "    torch_ = torch.nn.Linear(8, 9, bias=True, dtype=_DTYPE)",
        "    lambda_ = _tensor(",
        "    json_ = _tensor(",
        "    lambda__ = _tensor(",
        "    _params = [torch_.weight, torch_.bias, lambda_, lambda__]",
        "    main_ = torch.optim.SGD(_params, lr=0.1)",
        '        _observe("g", "g", 11, _it, g, _it == 3)',
    ]:
        assert line in script, line
    compile(script, "hostile", "exec")


# ---- the PyTorch script, run ---------------------------------------------------------------------


def _run_script(text: str) -> list[dict[str, Any]]:
    """The script's `main()` run in this process: its printed observations."""
    namespace: dict[str, Any] = {"__name__": "rendered"}
    threads = torch.get_num_threads()
    out = io.StringIO()
    try:
        exec(compile(text, "rendered", "exec"), namespace)
        with contextlib.redirect_stdout(out):
            namespace["main"]()
    finally:
        torch.set_num_threads(threads)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _same_observations(printed: list[dict[str, Any]], program: Program) -> None:
    result = torch_interp.run(program)
    assert result["outcome"] == "ok", result["failure"]
    expected = result["observations"]
    assert len(printed) == len(expected)
    for got, want in zip(printed, expected):
        for key in ("values", "grad"):
            assert same_values(got.pop(key), want[key]), (want["label"], key)
        assert got == {k: v for k, v in want.items() if k not in ("values", "grad")}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NAME_SETS)
def test_a_torch_script_with_any_names_prints_what_the_interpreter_observes(names):
    p = hostile_program(names)
    _same_observations(_run_script(render_torch.render(p)), p)


def test_the_torch_script_with_every_hostile_name_runs_on_its_own(tmp_path):
    p = hostile_program(HOSTILE)
    script = tmp_path / "hostile.py"
    script.write_text(render_torch.render(p, title='every hostile name \\N{x} """ \x00'))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    _same_observations([json.loads(line) for line in out.stdout.splitlines()], p)


# ---- the Rust reproducers, built and run -----------------------------------------------------------

DRAWN = 3
"""Name sets drawn (derandomized) for the build, beside the one with every hostile name."""


def drawn_programs() -> list[Program]:
    found: list[Program] = []

    @settings(max_examples=DRAWN, derandomize=True, database=None, deadline=None)
    @given(NAME_SETS)
    def draw(names: list[str]) -> None:
        if len(found) < DRAWN:
            found.append(hostile_program(names))

    draw()
    return found


TITLES = {
    "every-hostile-name": "main",
    "drawn-0": "lib",
    "drawn-1": "bin/data",
    "drawn-2": 'fn"); std::process::exit(0); //\n\\',
}
"""The member names the reproducers are bundled under: the dispatcher's own file (`src/main.rs`),
what cargo would take for targets of their own (`src/lib.rs`, `src/bin/`), a keyword, the end of
a string literal and a line break."""
MEMBER_NAMES = list(
    dict.fromkeys(
        [
            *TITLES.values(),
            *HOSTILE,
            *(n.upper() for n in HOSTILE),
            *(f"{n}-" for n in HOSTILE),
            *(
                "",
                "-",
                "1st",
                "__",
                "a__b",
                "a-b",
                "a_b",
                "a b",
                "\u00fcn\u00efcode",
                "crate::x",
                "r#fn",
                '"',
                "\\",
                "\x00",
            ),
            "x" * 70,
            "x" * 60 + "y",
        ]
    )
)
BUNDLE = "repro-names"


def test_hostile_member_names_get_distinct_snake_case_module_names(tmp_path):
    members = dict.fromkeys(MEMBER_NAMES, hostile_program(HOSTILE[:SLOTS]))
    folder = tmp_path / "bundle"
    modules = write_bundle(folder, members)
    assert len(modules) == len(members) and len(set(modules)) == len(modules)
    # snake case (rustc's non_snake_case lint trims `_` at the ends and refuses `__` inside)
    for module in modules:
        assert re.fullmatch(r"[a-z](_?[a-z0-9])*_*", module) and module not in MODULE_RESERVED, module
    assert {"main", "lib", "bin", "fn", "self", "crate", "std", "burn"} <= MODULE_RESERVED
    written = sorted(p.relative_to(folder / "src").as_posix() for p in (folder / "src").rglob("*") if p.is_file())
    assert written == sorted(["main.rs", *(f"{m}.rs" for m in modules), *(f"{m}/data.rs" for m in modules)])
    dispatcher = (folder / "src" / "main.rs").read_text()
    table = re.findall(r'^    \("([a-z0-9_]+)", ([a-z0-9_]+)::main\),$', dispatcher, re.MULTILINE)
    assert table == [(m, m) for m in modules]
    assert re.findall(r"^mod ([a-z0-9_]+);$", dispatcher, re.MULTILINE) == modules


@pytest.fixture(scope="module")
def built() -> dict[str, Any]:
    require_tool("cargo", "to build the reproducers")
    programs = {"every-hostile-name": hostile_program(HOSTILE)}
    programs.update({f"drawn-{i}": p for i, p in enumerate(drawn_programs())})
    folder = cache_dir() / "repro-names-bundle"
    names = write_bundle(
        folder, {TITLES[key]: p for key, p in programs.items()}, name=BUNDLE, lockfile=PROJECT_ROOT / "Cargo.lock"
    )
    env = dict(os.environ)
    env.setdefault("CARGO_TARGET_DIR", str(target_dir()))
    out = subprocess.run(
        ["cargo", "build", "--release"], cwd=folder, env=env, capture_output=True, text=True, timeout=3000
    )
    assert out.returncode == 0, out.stderr[-6000:]
    exe = Path(env["CARGO_TARGET_DIR"]) / "release" / BUNDLE
    runs = {}
    for key, name in zip(programs, names):
        ran = subprocess.run(
            [str(exe), name], capture_output=True, text=True, timeout=300, env=dict(os.environ, RUST_BACKTRACE="0")
        )
        runs[key] = read_run(ran.stdout, ran.stderr, ran.returncode)
    sources = {key: f"src/{name}.rs" for key, name in zip(programs, names)}
    return {"programs": programs, "runs": runs, "sources": sources, "names": names, "build": out.stderr}


@pytest.mark.slow
@pytest.mark.cargo
def test_reproducers_with_hostile_names_build_without_warnings(built):
    warnings = [line for line in built["build"].splitlines() if line.startswith("warning")]
    assert not warnings, built["build"][-6000:]


@pytest.mark.slow
@pytest.mark.cargo
@pytest.mark.parametrize("key", ["every-hostile-name", *(f"drawn-{i}" for i in range(DRAWN))])
def test_a_reproducer_with_hostile_names_prints_what_the_interpreter_observes(built, key):
    problems = agreement(built["programs"][key], built["runs"][key], source=built["sources"][key])
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.cargo
def test_the_hostile_member_names_are_the_names_that_run_them(built):
    assert built["names"] == ["main_", "lib_", "bin_data", "fn_std_process_exit_0"]
    assert all(run.observations for run in built["runs"].values())
