"""The report's training curves (`runner/report/curves.py`, `html_curves.py`, the Markdown
table): where two runs' loss curves part beyond the case's tolerance, the final weights'
largest difference, ms per training step, and case text escaped on the page."""

from __future__ import annotations

import copy
import html
import json
import math
from pathlib import Path

import pytest
from report_fixtures import _observation, _program_run, _ref, program_results, report, save

from runner.model.case import RunRef, Tolerance
from runner.model.results import CaseInfo, PairInfo, RunRecord
from runner.report import curves

TORCH_LOSSES = [0.0, 2.0, 1.5, 1.0, 0.5, 0.25, 0.125]
# Equal for two steps, 1e-5 relative at step 3 (inside rel 1e-4), 10 % at step 4, then equal.
BURN_LOSSES = [0.0, 2.0, 1.5, 1.0 * (1 + 1e-5), 0.55, 0.25, 0.125]
HOSTILE = "<script>alert(1)</script>"


def _losses(values: list[float]) -> dict:
    obs = _observation("losses", values, None, False, False)
    obs["shape"] = [len(values)]
    return obs


def _run(framework: str, mode: str, losses: list[float], step_ms: list[float], weight: list[float]) -> dict:
    run = _program_run(framework, mode, observations=[_losses(losses), _observation("w", weight, None, True, True)])
    run["case"] = "model_toy"
    run["step_ms"] = step_ms
    return run


def model_results(reason: str = "the fix agrees") -> dict:
    """TEST fixture, written by hand: a model case (`losses` collected per step) whose torch
    and burn runs part at step 4; no real run made these numbers."""
    doc = program_results()
    weight = [0.5, -1.0, 2.0, 0.0, 1.0, -0.5]
    moved = [0.5, -1.0, 2.0, 0.0, 1.0, -0.25]
    doc["cases"].append(
        {
            "name": "model_toy",
            "kind": "program",
            "description": "a toy model " + HOSTILE,
            "pairs": [{"a": _ref("torch/port"), "b": _ref("burn/fixed"), "same": ["values:losses"], "reason": reason}],
            "programs": {},
            "tolerance": {"abs": 1e-7, "rel": 1e-4},
        }
    )
    # Two training steps per iteration of the timed loop: 2 ms an iteration is 1 ms a step.
    doc["runs"].append(_run("torch", "port", TORCH_LOSSES, [2.0, 2.0, 4.0], weight))
    doc["runs"].append(_run("burn", "fixed", BURN_LOSSES, [1.0, 1.0, 1.0], moved))
    doc["summary"]["runs"] += 2
    return doc


def _info(
    tolerance: Tolerance | None = Tolerance(abs=1e-7, rel=1e-4),
    weights: Tolerance | None = None,
    grads: Tolerance | None = None,
) -> CaseInfo:
    pair = PairInfo(
        a=RunRef(framework="torch", mode="port"), b=RunRef(framework="burn", mode="fixed"), same=["values:losses"]
    )
    return CaseInfo(
        name="model_toy",
        kind="program",
        pairs=[pair],
        tolerance=tolerance,
        weights_tolerance=weights,
        grads_tolerance=grads,
    )


def _records(doc: dict) -> tuple[RunRecord, RunRecord]:
    a, b = (RunRecord.model_validate_json(json.dumps(r)) for r in doc["runs"][-2:])
    return a, b


def test_the_curves_part_at_the_first_step_beyond_the_tolerance() -> None:
    a, b = _records(model_results())
    c = curves.curve(_info(), 0, a, b)
    assert c is not None
    assert c.losses_a == TORCH_LOSSES[1:] and len(c.rel) == 6  # the placeholder left out
    assert c.first_apart == 4 and curves.first_apart_text(c) == "step 4"
    assert c.max_rel_step == 4 and math.isclose(c.max_rel, 0.05 / 0.55)
    assert c.claim == "same"
    assert c.finals == [("w", 0.25, 0.125)]  # run a's largest magnitude is 2
    assert curves.finals_text(c) == "w 0.25 (rel 0.12)"
    assert c.ms_per_step_a == 1.0 and c.ms_per_step_b == 0.5


def test_a_looser_tolerance_never_parts_and_an_old_results_file_has_the_default() -> None:
    a, b = _records(model_results())
    loose = curves.curve(_info(Tolerance(abs=0.0, rel=0.2)), 0, a, b)
    assert loose is not None and loose.first_apart is None and curves.first_apart_text(loose) == "never"
    default = curves.curve(_info(None), 0, a, b)  # written before results kept the tolerance
    assert default is not None and default.tolerance == Tolerance() and default.first_apart == 4


def test_nan_losses_part_unless_both_are_nan() -> None:
    tol = Tolerance()
    assert curves.apart(1.0, math.nan, tol)
    assert not curves.apart(math.nan, math.nan, tol)
    assert curves.apart(math.inf, 1.0, tol) and not curves.apart(math.inf, math.inf, tol)
    assert not curves.apart(1.0, 1.0 + 5e-5, tol) and curves.apart(1.0, 1.0 + 5e-4, tol)


def _at(label: str, iteration: int, values: list[float] | None, grad: list[float] | None) -> dict:
    obs = _observation(label, values, grad, True, True)
    obs["iteration"] = iteration
    return obs


def with_checkpoints(doc: dict, label: str = "w at checkpoints") -> dict:
    """TEST fixture, written by hand: a weight and its gradient observed at the timed loop's three
    iterations (two steps each): the values agree throughout, the gradient parts at iteration 2
    (step 4) by 1 % and stays apart; a flags-only observation that never compares."""
    weight = [0.5, -1.0, 2.0, 0.0, 1.0, -0.5]
    grads = {"torch": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "burn": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6 * 1.01]}
    for run in doc["runs"][-2:]:
        for iteration in (1, 2, 3):
            grad = grads["torch"] if iteration == 1 else grads[run["framework"]]
            run["observations"].append(_at(label, iteration, weight, grad))
            run["observations"].append(_at("flags only", iteration, None, None))
    return doc


def test_the_first_checkpoint_at_which_a_weight_or_its_gradient_parts() -> None:
    a, b = _records(with_checkpoints(model_results()))
    c = curves.curve(_info(), 0, a, b)
    assert c is not None
    assert c.checkpoints == (2, 4, 6)  # iterations 1 to 3 of two training steps each
    assert c.first_checkpoint_apart is not None and c.first_checkpoint_apart[:2] == (4, "w at checkpoints grad")
    assert math.isclose(c.first_checkpoint_apart[2], 0.006)
    loss = "the loss tolerance (abs 1e-07, rel 0.0001)"  # the case has no weights tolerance
    assert curves.checkpoint_text(c) == f"step 4 (w at checkpoints grad, up to 0.006 apart; {loss})"
    loose = curves.curve(_info(Tolerance(abs=0.0, rel=0.05)), 0, a, b)
    assert loose is not None and loose.first_checkpoint_apart is None
    assert curves.checkpoint_text(loose) == "never (3 checkpoints; the loss tolerance (abs 0, rel 0.05))"
    # a gradient only one run holds parts too
    doc = with_checkpoints(model_results())
    for obs in doc["runs"][-1]["observations"]:
        if obs["iteration"] == 1:
            obs["grad"] = None
    one = curves.curve(_info(), 0, *_records(doc))
    assert one is not None and curves.checkpoint_text(one) == f"step 2 (w at checkpoints grad, in one run only; {loss})"
    plain = curves.curve(_info(), 0, *_records(model_results()))
    assert plain is not None and plain.checkpoints == () and curves.checkpoint_text(plain) == "-"


def _apart(info: CaseInfo, doc: dict) -> tuple[int, str, float] | None:
    c = curves.curve(info, 0, *_records(doc))
    assert c is not None
    return c.first_checkpoint_apart


def test_the_checkpoints_use_the_weights_tolerance_scaled_to_each_tensor() -> None:
    """The weights and gradients at the checkpoints are compared within the case's weights
    tolerance, not the loss tolerance, whose losses still part at step 4; an abs scaled to the
    tensor is a fraction of that observation's own largest magnitude (the gradient's 0.606, not
    the weight's 2.0), element by element."""
    doc = with_checkpoints(model_results())  # the gradient parts by 0.006 from step 4
    loss = Tolerance(abs=1e-7, rel=1e-4)
    weights = Tolerance(abs=0.02, rel=0.0, abs_scale="tensor")  # 0.02 x 0.606 = 0.012 > 0.006
    c = curves.curve(_info(loss, weights), 0, *_records(doc))
    assert c is not None and c.first_apart == 4 and c.first_checkpoint_apart is None
    within = "the weights tolerance (abs 0.02 x the tensor's max, rel 0)"
    assert curves.checkpoint_text(c) == f"never (3 checkpoints; {within})"
    # 0.9 % of the gradient's largest magnitude is 0.0055 < 0.006: apart; 0.9 % of the weight's
    # (0.018) would not be, nor is an abs of 0.009 in the values' own units.
    tight = Tolerance(abs=0.009, rel=0.0, abs_scale="tensor")
    found = _apart(_info(loss, tight), doc)
    assert found is not None and found[:2] == (4, "w at checkpoints grad") and math.isclose(found[2], 0.006)
    assert _apart(_info(loss, Tolerance(abs=0.009, rel=0.0)), doc) is None
    # the gradients' own tolerance applies to them, the weights tolerance to the values
    strict = Tolerance(abs=1e-3, rel=0.0, abs_scale="tensor")
    c = curves.curve(_info(loss, weights, strict), 0, *_records(doc))
    assert (
        c is not None
        and c.first_checkpoint_apart is not None
        and c.first_checkpoint_apart[:2] == (4, "w at checkpoints grad")
    )
    both = "the weights tolerance (abs 0.02 x the tensor's max, rel 0; gradients abs 0.001 x the tensor's max, rel 0)"
    assert curves.checkpoint_text(c) == f"step 4 (w at checkpoints grad, up to 0.006 apart; {both})"
    assert _apart(_info(loss, strict, weights), doc) is None  # values within 0.001 (they are equal)
    # a weight 3 % apart at step 6 is beyond the weights tolerance of 2 %, and says so first
    for obs in doc["runs"][-1]["observations"]:
        if obs["label"] == "w at checkpoints" and obs["iteration"] == 3:
            obs["values"] = [v * 1.03 for v in obs["values"]]
    found = _apart(_info(loss, weights), doc)
    assert found is not None and found[:2] == (6, "w at checkpoints values") and math.isclose(found[2], 0.06)


TOY_WEIGHTS = 'weights_tolerance = { abs = 0.02, rel = 0.0, abs_scale = "tensor" }\n'


def test_the_oracles_and_the_report_take_the_weights_tolerance_from_the_case(tmp_path: Path) -> None:
    """One tolerance from the case file to both: a pair's `grads:` claim on a label observed at
    the checkpoints (`runner.oracles.agreement`) and the report's checkpoints (`case_info`)."""
    from runner import oracles
    from runner.cases import load_case
    from runner.results import case_info

    a, b = _records(with_checkpoints(model_results()))
    for text, same in ((TOY_CASE, False), (TOY_CASE.replace("[program]\n", "[program]\n" + TOY_WEIGHTS), True)):
        (tmp_path / "model_toy.toml").write_text(text)
        case = load_case(tmp_path / "model_toy.toml")
        judged = oracles.agreement("grads:w at checkpoints", a, b, case)
        assert judged.same is same, judged.observed
        assert oracles.agreement("values:w at checkpoints", a, b, case).same is True
        c = curves.curve(case_info(case), 0, a, b)
        assert c is not None and (c.first_checkpoint_apart is None) is same
    # observations after the loop keep the loss tolerance: the final weight is 0.25 apart
    assert oracles.agreement("values:w", a, b, case).same is False


def test_the_report_shows_the_first_checkpoint_apart_next_to_the_first_step_apart(tmp_path: Path) -> None:
    doc = with_checkpoints(model_results(), label=f"w {HOSTILE}")  # TEST fixture, written by hand
    path = save(tmp_path / "model.json", doc)
    out = tmp_path / "out"
    report("--from-results", path, "--out", out, "--history", tmp_path / "history")
    page = (out / "report.html").read_text()
    assert "weights, grads: first checkpoint apart" in page
    assert "step 4 (w &lt;script&gt;alert(1)&lt;/script&gt; grad, up to 0.006 apart; the loss tolerance" in page
    assert "at the checkpoints (steps 2, 4, 6): first apart" in page
    assert HOSTILE not in page
    md = (out / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| model_toy"))
    assert "| step 4 | step 4 (w &lt;script>alert(1)&lt;/script> grad, up to 0.006 apart; the loss tolerance" in row
    assert "<script" not in md
    # with the case's weights tolerance (in the results file), both say it and never part
    doc["cases"][-1]["weights_tolerance"] = {"abs": 0.02, "rel": 0.0, "abs_scale": "tensor"}
    report("--from-results", save(tmp_path / "model.json", doc), "--out", out, "--history", tmp_path / "history")
    within = "never (3 checkpoints; the weights tolerance (abs 0.02 x the tensor's max, rel 0))"
    assert html.escape(within) in (out / "report.html").read_text()
    assert within in (out / "report.md").read_text()


def test_a_run_without_losses_has_no_curve() -> None:
    doc = model_results()
    doc["runs"][-1]["observations"] = doc["runs"][-1]["observations"][1:]
    a, b = _records(doc)
    assert curves.curve(_info(), 0, a, b) is None


def test_the_report_plots_both_curves_and_escapes_the_case_text(tmp_path: Path) -> None:
    path = save(tmp_path / "model.json", model_results(reason=f"agree {HOSTILE}"))  # TEST fixture, written by hand
    out = tmp_path / "out"
    report("--from-results", path, "--out", out, "--history", tmp_path / "history")
    page = (out / "report.html").read_text()
    assert '<section id="models">' in page and 'href="#models"' in page
    assert 'id="curve-model_toy-0-' in page and 'id="curve-diff-model_toy-0-' in page
    assert "apart at step 4" in page
    assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    md = (out / "report.md").read_text()
    assert "## Models trained side by side" in md
    row = next(line for line in md.splitlines() if line.startswith("| model_toy"))
    assert "| step 4 |" in row and "0.091 (step 4)" in row and "1 / 0.5" in row
    assert "<script" not in md


def test_a_report_without_models_has_no_models_section(tmp_path: Path) -> None:
    doc = copy.deepcopy(program_results())
    path = save(tmp_path / "program.json", doc)  # TEST fixture, written by hand
    out = tmp_path / "out"
    report("--from-results", path, "--out", out, "--history", tmp_path / "history")
    assert '<section id="models">' not in (out / "report.html").read_text()
    assert "Models trained side by side" not in (out / "report.md").read_text()


def test_a_report_from_results_files_says_it_did_not_localize(tmp_path: Path) -> None:
    path = save(tmp_path / "model.json", model_results())  # TEST fixture, written by hand
    out = tmp_path / "out"
    report("--from-results", path, "--out", out, "--history", tmp_path / "history")
    assert "not localized (the report was made from results files)" in (out / "report.md").read_text()


NESTED = """
lin = Linear(3, 2)
x = input(4, 3)
opt = sgd(lr=0.1)
for block in range(20):
    for step in range(10):
        loss = mean(lin(x) ** 2)
        zero_grad(opt)
        backward(loss)
        step(opt)
"""


def test_a_cut_shortens_the_timed_loop_or_its_first_block() -> None:
    from runner.fuzz.origins import cut
    from runner.program.ir import timed_loop
    from runner.program.syntax import parse

    flat = cut(parse(NESTED.replace("    for step in range(10):\n", "").replace("        ", "    "), where="t"), 3)
    assert flat is not None and timed_loop(flat.body).attrs["count"] == 3  # type: ignore[union-attr]
    nested = cut(parse(NESTED, where="t"), 4)
    assert nested is not None
    loop = timed_loop(nested.body)
    assert loop is not None and loop.body is not None
    assert loop.attrs["count"] == 1 and loop.body[0].attrs["count"] == 4
    assert cut(parse("x = input(2)\ny = x * 2.0", where="t"), 2) is None


@pytest.mark.slow
def test_the_origin_of_adams_epsilon_is_the_first_optimizer_step() -> None:
    """Real torch and the real probe: Adam with each framework's epsilon default; the gradients
    of the first step agree, the params after it do not."""
    from runner.fuzz.origins import find
    from runner.fuzz.pool import WorkerPool
    from runner.program.syntax import parse

    # Gradients near 1e-4: epsilon (1e-8 against 1e-5) changes the first update by about 10 %.
    source = NESTED.replace("sgd(lr=0.1)", "adam(lr=0.01)").replace("mean(lin(x) ** 2)", "mean(lin(x) ** 2) * 0.0001")
    with WorkerPool() as pool:
        origin = find(parse(source, where="t"), 0, 5, pool)
    assert origin is not None
    assert (origin.step, origin.op, origin.what, origin.line) == (1, "step", "values", 10)
    assert origin.text() == "step 1, line 10: `step` (values of lin.weight differ)"


TOY_CASE = """
name = "model_toy"
kind = "program"
[program]
source = '''
lin = Linear(3, 2)
x = input(4, 3)
losses = input(1, init="zeros")
opt = adam(lr=0.01)
for step in range(6):
    loss = mean(lin(x) ** 2)
    zero_grad(opt)
    backward(loss)
    step(opt)
    losses = cat(losses, reshape(detach(loss), [1]))
observe(losses)
'''
[[runs]]
framework = "torch"
mode = "main"
[[runs]]
framework = "burn"
mode = "main"
[[pairs]]
a = "torch/main"
b = "burn/main"
same = ["values:losses"]
reason = "test fixture"
"""


def test_the_report_asks_where_the_curves_of_one_program_start_to_part(tmp_path: Path) -> None:
    from runner.cases import load_case
    from runner.report import command, html_page, markdown
    from runner.report.history import History
    from runner.results import validate

    doc = model_results()
    for run, mode in zip(doc["runs"][-2:], ("main", "main"), strict=True):
        run["mode"] = mode
    doc["cases"][-1]["pairs"] = [{"a": _ref("torch/main"), "b": _ref("burn/main"), "same": ["values:losses"]}]
    (tmp_path / "model_toy.toml").write_text(TOY_CASE)
    case = load_case(tmp_path / "model_toy.toml")
    asked: list[tuple[str, str, int]] = []

    def localize(requests: list) -> list[str | None]:
        asked.extend((c.name, variant, up_to) for c, variant, up_to in requests)
        return ["step 1, line 9: `step` (values of lin.weight differ) <b>"]

    report = command.build([(validate(doc, "fixture"), "fixture")], History(tmp_path / "history"))
    report.origins = command._origins(report, [case], localize)
    assert asked == [("model_toy", "main", 4)]
    assert "step 1, line 9: `step` (values of lin.weight differ) &lt;b>" in markdown.render(report)
    page = html_page.render(report)
    assert "step 1, line 9: <code>step</code> (values of lin.weight differ) &lt;b&gt;" in page
