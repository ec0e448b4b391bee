"""pytest collects case files: each run and pair is an item with a readable id;
a broken case file is one failed item naming the file and the key, and the
other cases still run (real torch and the real probe, at small sizes)."""

from __future__ import annotations

import textwrap

import pytest

pytestmark = pytest.mark.slow

pytest_plugins = ["pytester"]

SMALL = """
kind = "p10"
[params]
d_in = 16
d_out = 16
batch = 4
steps = 400
[[runs]]
framework = "torch"
mode = "detach"
expect = { outcome = "ok", tracked = false }
[[runs]]
framework = "burn"
mode = "detach"
expect = { outcome = "ok", tracked = true }
[[runs]]
framework = "burn"
mode = "without"
expect = { outcome = "ok", tracked = {tracked} }
[[pairs]]
a = "torch/detach"
b = "burn/without"
same = ["tracked"]
reason = "without_autodiff() is the constant"
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\ncase_paths = mycases\n")
    folder = pytester.mkdir("mycases")
    (folder / "small.toml").write_text(textwrap.dedent(SMALL).replace("{tracked}", "false"))
    (folder / "wrong.toml").write_text(textwrap.dedent(SMALL).replace("{tracked}", "true"))
    (folder / "broken.toml").write_text('kind = "p10"\n[params]\nsteps = "many"\n')
    return pytester


def test_runs_and_pairs_are_items_and_a_broken_file_is_one_failure(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-p", "runner.pytest_plugin", "mycases", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=7, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*mycases/broken.toml::broken[[]load[]] FAILED*",
            "*mycases/small.toml::small[[]torch-detach[]] PASSED*",
            "*mycases/small.toml::small[[]burn-without[]] PASSED*",
            "*mycases/small.toml::small[[]torch-detach~burn-without[]] PASSED*",
            "*mycases/wrong.toml::wrong[[]burn-without[]] FAILED*",
        ]
    )
    output = result.stdout.str()
    assert "broken.toml: params.steps: Input should be a valid integer, got 'many'" in output
    assert "wrong.toml burn/without:\ntracked: expected True, observed False" in output


def test_case_items_are_marked_slow(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "-p", "runner.pytest_plugin", "mycases", "-m", "not slow", "-p", "no:cacheprovider"
    )
    # the broken file's item is not a case run, so it is collected and fails even in the fast subset
    result.assert_outcomes(failed=1, deselected=8)


# A soft-updated target whose output enters the loss: burn's third backward panics
# (`cases/target_soft_update.toml`), so `outcome = "ok"` holds only for a loop of at most 2 steps.
SHORTENED = """
kind = "program"
[program]
test_steps = 2
source = '''
online = Linear(4, 3)
target = Linear(4, 3)
x = input(8, 4)
module_no_grad(target)
opt = sgd(lr=0.1)
for step in range(50):
    loss = mean(online(x) ** 2) + mean(target(x) ** 2)
    zero_grad(opt)
    backward(loss)
    step(opt)
    soft_update(target, online, 0.1)
'''
[[runs]]
framework = "burn"
mode = "main"
expect = { outcome = "ok" }
"""


def test_test_steps_shortens_the_timed_loop_for_the_collector_only(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncase_paths = mycases\n")
    folder = pytester.mkdir("mycases")
    path = folder / "shortened.toml"
    path.write_text(textwrap.dedent(SHORTENED))
    result = pytester.runpytest_subprocess("-p", "runner.pytest_plugin", "mycases", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    # `check` runs the loop as written: the third step panics.
    from runner.cases import load_case
    from runner.engine import check

    document = check([load_case(path)])
    assert [run.outcome for run in document.runs] == ["panic"]
