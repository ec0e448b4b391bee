"""The FLOP count of a program's training step (`runner.program.flops`, torch's FlopCounterMode)
against hand counts; one count per variant, given to both frameworks' runs (`runner.engine`);
the count's own worker (`execute.count_flop`); GFLOP/s in the report's models section and
report.md. No absolute times: the fake runs' step times are given."""

from __future__ import annotations

import statistics
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from report_fixtures import report, save
from test_report_curves import model_results

from runner import cases, engine, execute, noise
from runner.cost import p10_step_flop
from runner.execute import CountRequest, RunRequest
from runner.model.case import ProgramCase
from runner.model.results import RawRun, from_data
from runner.paths import CASES_DIR
from runner.program import flops
from runner.program.data import Recipe, materialize
from runner.program.syntax import parse

# batch, d_in, d_out of the hand-counted Linear: one matrix product is 2·B·I·O
B, D_IN, D_OUT = 4, 16, 8
PRODUCT = 2 * B * D_IN * D_OUT


def program(source: str):
    return materialize(parse(source, where="test_flops"), 0)


LINEAR = """
lin = Linear(16, 8)
x = {x}(4, 16)
opt = sgd(lr=0.1)
for step in range({steps}):
    loss = mean(lin(x) ** 2)
    zero_grad(opt)
    backward(loss)
    step(opt)
"""


def test_a_linear_step_is_one_matrix_product_forward_and_one_or_two_backward() -> None:
    # forward x @ W^T + b: 2·B·I·O (addmm); backward dW = g^T @ x: 2·B·I·O; an input needs no dx
    by_op = flops.step_flop_by_op(program(LINEAR.format(x="input", steps=3)))
    assert by_op is not None
    assert sum(by_op.values()) == 2 * PRODUCT
    assert set(by_op) <= {"aten.addmm", "aten.mm"} and by_op.get("aten.addmm") == PRODUCT
    # a param x needs its gradient too: dx = g @ W, one more 2·B·I·O
    assert flops.step_flop(program(LINEAR.format(x="param", steps=3))) == 3 * PRODUCT


def test_the_count_is_of_one_iteration_whatever_the_loop_runs() -> None:
    one = flops.step_flop(program(LINEAR.format(x="input", steps=1)))
    assert one == flops.step_flop(program(LINEAR.format(x="input", steps=500))) == 2 * PRODUCT


def test_a_convolution_counts_its_forward_and_its_weight_gradient() -> None:
    source = """
conv = Conv2d(1, 8, 3, padding=1)
x = input(2, 1, 6, 6)
opt = sgd(lr=0.1)
for step in range(2):
    loss = mean(conv(x) ** 2)
    zero_grad(opt)
    backward(loss)
    step(opt)
"""
    # 2 · batch · c_out · c_in · k² · output positions, forward and for the weight's gradient
    per_pass = 2 * 2 * 8 * 1 * 3 * 3 * 6 * 6
    by_op = flops.step_flop_by_op(program(source))
    assert by_op == {"aten.convolution": per_pass, "aten.convolution_backward": per_pass}


def test_nested_blocks_count_every_step_of_an_iteration() -> None:
    source = """
lin = Linear(16, 8)
x = input(4, 16)
opt = sgd(lr=0.1)
for block in range(3):
    for step in range(5):
        loss = mean(lin(x) ** 2)
        zero_grad(opt)
        backward(loss)
        step(opt)
"""
    assert flops.step_flop(program(source)) == 5 * 2 * PRODUCT


def test_no_timed_loop_or_a_failing_first_iteration_has_no_count() -> None:
    assert flops.step_flop(program("x = param(2, 2)\nl = sum(x * x)\nbackward(l)")) is None
    twice = "x = param(2, 2)\nfor step in range(3):\n    l = sum(x * x)\n    backward(l)\n    backward(l)\n"
    assert flops.step_flop(program(twice)) is None  # torch: the second backward raises


def _p10_program(mode: str):
    case = cases.load_case(CASES_DIR / "p10_program.toml")
    assert isinstance(case, ProgramCase)
    return case.programs[mode].make()


def test_p10_as_a_program_counts_the_matrix_products_of_p10s_hand_count() -> None:
    params = {"batch": 64, "d_in": 512, "d_out": 512}
    product = 2 * 64 * 512 * 512
    detach = flops.step_flop(_p10_program("detach"))
    assert detach == 2 * product
    # the hand count has the elementwise work on top (loss, SGD, EMA): 2 % more
    assert (
        p10_step_flop(params, "detach") == pytest.approx(detach, rel=0.03) and p10_step_flop(params, "detach") > detach
    )
    assert flops.step_flop(_p10_program("target")) == 3 * product
    # burn's without_autodiff is counted as torch's detach: the same products
    assert flops.step_flop(_p10_program("without")) == detach
    assert flops.step_flop(_p10_program("target-without")) == 3 * product


def test_a_recipe_goes_to_another_process_and_makes_the_same_program() -> None:
    case = cases.load_case(CASES_DIR / "model_mlp.toml")
    assert isinstance(case, ProgramCase)
    recipe = case.programs["fixed"]
    assert Recipe.load(recipe.dump()).make() == recipe.make()


# ---- one count per variant, both frameworks' runs ------------------------------------------

CASE = """
kind = "program"
[program]
prelude = '''
lin = Linear(16, 8)
x = input(4, 16)
'''
[program.variants]
a = '''
opt = sgd(lr=0.1)
for step in range(4):
    loss = mean(lin(x) ** 2)
    zero_grad(opt)
    backward(loss)
    step(opt)
'''
b = '''
opt = adam(lr=0.1)
for step in range(4):
    loss = mean(lin(x) ** 2)
    zero_grad(opt)
    backward(loss)
    step(opt)
'''
[[runs]]
framework = "torch"
mode = "a"
[[runs]]
framework = "burn"
mode = "a"
[[runs]]
framework = "burn"
mode = "b"
"""
# The same case with windows that fit its 4 iterations and a timing claim: burn/b is timed.
TIMED = (
    CASE.replace(
        '[[runs]]\nframework = "torch"', '[windows]\nwarmup = 1\nreference = 1\nlast = 1\n[[runs]]\nframework = "torch"'
    )
    + "expect = { slowdown_ratio = { max = 100.0 } }\n"
)


def _case(folder: Path, text: str) -> ProgramCase:
    path = folder / "costly.toml"
    path.write_text(text)
    loaded = cases.load_case(path)
    assert isinstance(loaded, ProgramCase)
    return loaded


@pytest.fixture
def case(tmp_path: Path) -> ProgramCase:
    return _case(tmp_path, CASE)


STEP_MS = {"torch/a": [4.0, 2.0, 2.0, 2.0], "burn/a": [3.0, 1.0, 1.0, 1.0], "burn/b": [2.0, 0.5, 0.5, 0.25]}


class Runs:
    """Fake workers with the given step times, and a fake counter: what it was asked to count,
    and whether it had ended when each run started."""

    def __init__(self) -> None:
        self.count_done = threading.Event()
        self.asked: list[list[tuple[str, str]]] = []
        self.started_after_count: dict[str, bool] = {}

    def counter(self, counted: list[Any], env: dict[str, str], controls: noise.Controls) -> engine.Counts:
        self.asked.append(sorted({(c.name, r.mode) for c in counted for r in c.runs}))
        self.count_done.set()
        return {("costly", "a"): 10.0, ("costly", "b"): 12.0}

    def __call__(self, request: RunRequest, progress: Any) -> RawRun:
        key = f"{request.framework}/{request.mode}"
        self.started_after_count[key] = self.count_done.is_set()
        return from_data(
            RawRun,
            {
                "case": request.case,
                "framework": request.framework,
                "mode": request.mode,
                "outcome": "ok",
                "params": request.recorded_params,
                "step_ms": STEP_MS[key],
            },
        )


def test_both_frameworks_runs_of_a_variant_get_its_one_count(case: ProgramCase) -> None:
    runs = Runs()
    records = engine.run_all([case], execute_run=runs, jobs=2, count=runs.counter)
    assert runs.asked == [[("costly", "a"), ("costly", "b")]], "one count, of every variant"
    torch_a, burn_a, burn_b = (records[("costly", k)].metrics for k in ("torch/a", "burn/a", "burn/b"))
    assert torch_a.step_mflop == burn_a.step_mflop == 10.0 and burn_b.step_mflop == 12.0
    # the case's windows do not fit 4 iterations: the rate is over the median iteration
    assert torch_a.reference_median_ms is None
    assert torch_a.gflops == pytest.approx(10.0 / statistics.median(STEP_MS["torch/a"]))
    assert burn_a.gflops == pytest.approx(10.0 / statistics.median(STEP_MS["burn/a"]))
    assert burn_a.gflops / torch_a.gflops == pytest.approx(2.0)


def test_the_count_ends_before_any_timed_run_starts_and_a_window_is_the_rates_basis(tmp_path: Path) -> None:
    runs = Runs()
    records = engine.run_all([_case(tmp_path, TIMED)], execute_run=runs, jobs=2, count=runs.counter)
    timed = records[("costly", "burn/b")]
    assert timed.conditions is not None and timed.conditions.timed is True
    assert runs.started_after_count["burn/b"], "the count never runs beside a timed run"
    # windows that fit: the reference window (iteration 2) is the basis, as for p10
    assert timed.metrics.reference_median_ms == 0.5 and timed.metrics.gflops == pytest.approx(12.0 / 0.5)


def test_without_a_counter_no_program_run_has_a_count(case: ProgramCase) -> None:
    records = engine.run_all([case], execute_run=Runs(), jobs=1, count=None)
    assert all(r.metrics.step_mflop is None and r.metrics.gflops is None for r in records.values())


def test_the_count_worker_counts_each_variant_in_torch(case: ProgramCase) -> None:
    counts = engine.count_flop([case], {}, noise.Controls())
    assert counts == {("costly", "a"): 2 * PRODUCT / 1e6, ("costly", "b"): 2 * PRODUCT / 1e6}


def test_a_count_worker_that_dies_leaves_no_count_and_no_error(case: ProgramCase) -> None:
    request = CountRequest({"0": case.programs["a"].dump()}, timeout_s=30)
    assert execute.count_flop(request, worker=[sys.executable, "-c", "import sys; sys.exit(3)"]) == {}
    assert execute.count_flop(CountRequest({}, timeout_s=30)) == {}


# ---- the report -------------------------------------------------------------------------------


def test_the_models_section_and_report_md_show_gflops_and_the_share_of_peak(tmp_path: Path) -> None:
    doc = model_results()  # TEST fixture, written by hand: 2 training steps per iteration
    doc["provenance"]["peak_gflops"] = 100.0
    # one count for both runs: 10 MFLOP an iteration, 5 a training step; torch's median
    # iteration 2 ms (5 GFLOP/s), burn's 1 ms (10 GFLOP/s)
    for run, rate in zip(doc["runs"][-2:], (5.0, 10.0), strict=True):
        run["metrics"].update(step_mflop=10.0, gflops=rate)
    out = tmp_path / "out"
    report("--from-results", save(tmp_path / "model.json", doc), "--out", out, "--history", tmp_path / "history")
    page = (out / "report.html").read_text()
    models = page[page.index('<section id="models">') :]
    models = models[: models.index("</section>")]
    assert "GFLOP/s a (of peak)" in models and "MFLOP/step" in models
    assert '<td class="num" data-sort="5">5 (5%)</td>' in models
    assert '<td class="num" data-sort="10">10 (10%)</td>' in models
    assert '<td class="num" data-sort="5">5</td>' in models  # MFLOP a training step, one for both
    assert "5 MFLOP a step, GFLOP/s (of peak) 5 (5%) (torch), 10 (10%) (burn)" in page  # the case's details
    md = (out / "report.md").read_text()
    models_md = md[md.index("## Models trained side by side") :]
    head = next(line for line in models_md.splitlines() if line.startswith("| case | pair |"))
    row = next(line for line in models_md.splitlines() if line.startswith("| model_toy"))
    cells = dict(zip(_cells(head), _cells(row), strict=True))
    assert cells["MFLOP/step"] == "5" and cells["GFLOP/s a / b (of peak)"] == "5 (5%) / 10 (10%)"


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]
