"""Loading and validating case files: every mistake names the file and the key."""

import math
import textwrap
from pathlib import Path

import pytest

from runner import cases
from runner.errors import BadInput
from runner.model.case import Bounds, ProgramCase, Tolerance, Windows

MINIMAL = """
kind = "p10"
[params]
steps = 400
[[runs]]
framework = "burn"
mode = "detach"
expect = { outcome = "ok", tracked = true, slowdown_ratio = { min = 2 } }
[[runs]]
framework = "torch"
mode = "detach"
[[pairs]]
a = "torch/detach"
b = "burn/detach"
differ = ["tracked"]
reason = "r"
"""


def write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_the_shipped_cases_load():
    paths = cases.all_cases()
    assert len(paths) >= 14 and {"p10_ema.toml", "p10_program.toml"} <= {p.name for p in paths}
    loaded = [cases.load_case(p) for p in paths]
    assert all(c.about is not None for c in loaded), "every shipped case says what it is about"
    case = cases.load_case(cases.resolve("p10_ema"))
    assert case.name == "p10_ema" and case.steps == 2000
    assert {r.key for r in case.runs} >= {"torch/detach", "burn/detach", "burn/without", "burn/target"}
    assert case.run("burn/target").expect.panic_message == "graph tape has already been consumed"
    assert len(case.pairs) == 5 and all(p.reason for p in case.pairs)


def test_minimal_case_gets_the_seed_defaults(tmp_path):
    case = cases.load_case(write(tmp_path, MINIMAL))
    assert case.params.d_in == 512 and case.params.ema_decay == 0.99
    assert case.params.checkpoints == [1, 50, 100, 200, 400]
    assert case.windows == Windows(warmup=50, reference=150, last=200)
    assert case.run("burn/detach").expect.slowdown_ratio == Bounds(min=2.0)


def assert_refused_naming(path, fragments) -> None:
    """Loading `path` is bad input whose message starts with the file and holds every fragment."""
    with pytest.raises(BadInput) as info:
        cases.load_case(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.parametrize(
    "edit, fragments",
    [
        (lambda s: s.replace('kind = "p10"', 'kind = "p10"\ncolour = 1'), ["colour", "unknown key", "valid keys"]),
        (lambda s: s.replace('kind = "p10"', 'kind = "p11"'), ["kind", "'p11'", "valid: p10"]),
        (lambda s: s.replace('kind = "p10"', "kind = = 1"), ["not valid TOML", "line 2"]),
        (lambda s: s.replace("steps = 400", 'steps = "400"'), ["params.steps", "valid integer", "'400'"]),
        (lambda s: s.replace("steps = 400", "steps = 0"), ["params.steps", "greater than or equal to 1"]),
        (lambda s: s.replace("steps = 400", "steps = 400\nd_in = true"), ["params.d_in", "valid integer", "got True"]),
        (lambda s: s.replace("steps = 400", "steps = 400\ncheckpoints = [5, 3]"), ["params.checkpoints", "increasing"]),
        (
            lambda s: s.replace("steps = 400", "steps = 400\ncheckpoints = [500]"),
            ["params.checkpoints", "from 1 to steps (400)"],
        ),
        (lambda s: s.replace("steps = 400", "steps = 300"), ["windows", "400", "more than the 300 steps"]),
        (
            lambda s: s.replace('mode = "detach"\nexpect', 'mode = "without"\nexpect').replace(
                'framework = "burn"', 'framework = "torch"', 1
            ),
            ["runs[0].mode", "'without'", "detach, target, log, ema-only"],
        ),
        (
            lambda s: s.replace('framework = "burn"', 'framework = "jax"'),
            ["runs[0].framework", "'torch' or 'burn'", "'jax'"],
        ),
        (
            lambda s: s.replace('outcome = "ok"', 'outcome = "fine"'),
            ["runs[0].expect.outcome", "'ok', 'panic', 'error', 'unsupported', 'crash', 'timeout' or 'oom'"],
        ),
        (lambda s: s.replace("tracked = true", "tracked = 1"), ["runs[0].expect.tracked", "valid boolean", "got 1"]),
        (
            lambda s: s.replace("{ min = 2 }", "{ least = 2 }"),
            ["runs[0].expect.slowdown_ratio.least", "unknown key", "max, min"],
        ),
        (lambda s: s.replace("{ min = 2 }", "{ min = 3, max = 2 }"), ["slowdown_ratio", "greater than max"]),
        (lambda s: s.replace('a = "torch/detach"', 'a = "torch/without"'), ["pairs[0].a", "not a run of this case"]),
        (lambda s: s.replace('differ = ["tracked"]', 'differ = ["speed"]'), ["pairs[0].differ", "'speed'", "grows"]),
        (lambda s: s.replace('reason = "r"', ""), ["pairs[0].reason", "missing"]),
        (lambda s: s + '[[runs]]\nframework = "burn"\nmode = "detach"\n', ["runs[2]", "burn/detach is listed twice"]),
        (
            lambda s: s.replace('expect = { outcome = "ok",', 'expect = { outcome = "ok", panic_step = 2,'),
            ["panic_step/panic_message need outcome"],
        ),
    ],
)
def test_bad_case_files_name_file_and_key(tmp_path, edit, fragments):
    assert_refused_naming(write(tmp_path, edit(MINIMAL)), fragments)


PROGRAM = """
kind = "program"
[program]
source = '''
w = param(2, 2)
for step in range(3):
    loss = mean(w * w)
    backward(loss)
    observe(w, "w at checkpoints", every_checkpoint=True)
observe(w)
'''
tolerance = { abs = 1e-7, rel = 1e-3 }
weights_tolerance = { abs = 1e-4, rel = 0.0, abs_scale = "tensor" }
[[runs]]
framework = "torch"
mode = "main"
"""


def test_a_program_cases_weights_tolerance_applies_inside_the_timed_loop(tmp_path):
    """`weights_tolerance` for the values observed inside the timed loop, `grads_tolerance` (here
    absent: the weights tolerance) for their gradients, `tolerance` after the loop; a case
    without them has the loss tolerance everywhere, as before."""
    program = cases.load_case(write(tmp_path, PROGRAM)).program
    loss, weights = Tolerance(abs=1e-7, rel=1e-3), Tolerance(abs=1e-4, rel=0.0, abs_scale="tensor")
    assert program.tolerances.of("values", 2) == weights and program.tolerances.of("grads", 2) == weights
    assert program.tolerances.of("values", None) == loss and program.tolerances.of("grads", None) == loss
    grads = PROGRAM.replace("[[runs]]", "grads_tolerance = { abs = 0.5, rel = 0.0 }\n[[runs]]")
    program = cases.load_case(write(tmp_path, grads)).program
    assert (
        program.tolerances.of("grads", 2) == Tolerance(abs=0.5, rel=0.0)
        and program.tolerances.of("values", 2) == weights
    )
    plain = cases.load_case(write(tmp_path, PROGRAM.replace("weights_tolerance", "# weights_tolerance"))).program
    assert plain.tolerances.of("values", 2) == loss and plain.tolerances.of("grads", 2) == loss
    # the scaled abs is a fraction of the largest finite magnitude of the two arrays compared
    assert math.isclose(weights.absolute([0.5, -2.0], [0.1, math.nan]), 2e-4)
    assert weights.close(1.0, 1.0 + 1.5e-4, weights.absolute([1.0, -2.0], [1.0, 2.0]))
    assert not weights.close(1.0, 1.0 + 2.5e-4, weights.absolute([1.0, -2.0], [1.0, 2.0]))


@pytest.mark.parametrize(
    "edit, fragments",
    [
        (
            lambda s: s.replace("abs = 1e-4", "abs = -1e-4"),
            ["program.weights_tolerance.abs", "greater than or equal to 0"],
        ),
        (
            lambda s: s.replace('abs_scale = "tensor"', 'abs_scale = "tensors"'),
            ["program.weights_tolerance.abs_scale", "'absolute' or 'tensor'", "'tensors'"],
        ),
        (lambda s: s.replace("rel = 0.0, abs_scale", "rel = nan, abs_scale"), ["program.weights_tolerance.rel"]),
        (
            lambda s: s.replace("rel = 0.0, abs_scale", "relative = 0.0, abs_scale"),
            ["program.weights_tolerance.relative", "unknown key"],
        ),
        (lambda s: s.replace("[[runs]]", 'grads_tolerance = "loose"\n[[runs]]'), ["program.grads_tolerance"]),
    ],
)
def test_a_bad_weights_tolerance_names_the_key(tmp_path, edit, fragments):
    assert_refused_naming(write(tmp_path, edit(PROGRAM)), fragments)


def test_name_must_match_the_file(tmp_path):
    with pytest.raises(BadInput, match="must match the file name 'c'"):
        cases.load_case(write(tmp_path, 'name = "other"\n' + MINIMAL))


def test_unreadable_and_missing_files(tmp_path):
    with pytest.raises(BadInput, match="no such case file"):
        cases.load_case(tmp_path / "missing.toml")
    binary = tmp_path / "b.toml"
    binary.write_bytes(b"\xff\xfe\x00kind")
    with pytest.raises(BadInput, match="not UTF-8 text"):
        cases.load_case(binary)


def test_resolve_by_name_and_unknown_name():
    assert cases.resolve("p10_ema") == cases.CASES_DIR / "p10_ema.toml"
    with pytest.raises(BadInput, match=r"known cases: .*p10_ema"):
        cases.resolve("p99")


def test_steps_override_drops_late_checkpoints_and_checks_windows():
    case = cases.load_case(cases.resolve("p10_ema"))
    short = cases.with_steps(case, 600)
    assert short.params.checkpoints == [1, 50, 100, 200, 500, 600]
    assert short.windows.last_range(600) == (401, 600)
    with pytest.raises(BadInput, match="--steps 300"):
        cases.with_steps(case, 300)


def test_a_program_cases_own_checkpoints_past_a_shorter_loop_are_dropped_and_its_last_added():
    """As p10's: a reference model trained for fewer steps (`test_steps`, `--steps`) still records
    its last iteration, where the observations at the last step take their values."""
    path = cases.resolve("model_transformer_lm")
    full = cases.load_case(path)
    short = cases.load_case(path, steps=120)
    assert isinstance(full, ProgramCase) and isinstance(short, ProgramCase)
    assert full.programs["port"].settings.checkpoints == [1, 50, 100, 150, 200]
    assert short.programs["port"].settings.checkpoints == [1, 50, 100, 120]
    exact = cases.load_case(path, steps=100)
    assert isinstance(exact, ProgramCase) and exact.programs["fixed"].settings.checkpoints == [1, 50, 100]


def test_select_filters_runs_and_keeps_only_whole_pairs():
    case = cases.load_case(cases.resolve("p10_ema"))
    burn = cases.select(case, ["burn"], None)
    assert {r.framework for r in burn.runs} == {"burn"}
    assert [(str(p.a), str(p.b)) for p in burn.pairs] == [("burn/without", "burn/detach")]
    detach = cases.select(case, None, ["detach"])
    assert {r.key for r in detach.runs} == {"torch/detach", "burn/detach"}
    assert [(str(p.a), str(p.b)) for p in detach.pairs] == [("torch/detach", "burn/detach")]
    with pytest.raises(BadInput, match="--mode: unknown mode 'fast'"):
        cases.select(case, None, ["fast"])
