"""Planted-bug recall against the real probe: mutants of the burn interpreter
(`rust_probe/src/program/mutants.rs`, the cargo feature `mutants`, never in the default probe)
built as a separate extension module and loaded through RUNNER_PROBE_PATH. Each of the four
classes (a gradient, a value at an edge, an optimizer rule, an autodiff flag) must be found
within a fixed number of programs, attributed to its operation, as one root cause.

The short version of the same recall, with the bugs planted in a stand-in burn, runs in the
default suite (`tests/test_fuzz.py::test_planted_bugs_of_four_classes_are_each_found_once_and_attributed`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runner.fuzz.campaign import ShardSpec, run_shard
from runner.fuzz.localize import Localizer
from runner.fuzz.pool import WorkerPool
from runner.program import syntax

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = {
    "sigmoid-grad": ("grads", "sigmoid"),
    "tanh-edge": ("values", "tanh"),
    "sgd-weight-decay": ("values", "sgd"),
    "detach-nonleaf": ("flags", "detach"),
}
WITHIN = 300  # programs
SEED = 11


@pytest.fixture(scope="module")
def mutant_probe(tmp_path_factory) -> str:
    """The probe built with the `mutants` feature, copied to a file of its own."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "burn-torch-diff" / "target"))
    env = {**os.environ, "CARGO_TARGET_DIR": str(target)}
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "-p", "rust_probe", "--features", "python,mutants", "--lib"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    probe = tmp_path_factory.mktemp("mutants") / "_probe_mutants.abi3.so"
    shutil.copy(target / "release" / "librust_probe.so", probe)
    return str(probe)


@pytest.fixture(scope="module")
def unchanged() -> set[str]:
    """The root causes the same programs show with the probe as it is (real differences)."""
    with WorkerPool(timeout_s=60) as pool:
        _, causes = run_shard(ShardSpec(seed=SEED, max_programs=WITHIN, budget_s=3600), pool=pool)
    return {c.signature for c in causes}


@pytest.mark.cargo
@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_each_mutant_is_found_within_a_fixed_number_of_programs(mutant_probe, unchanged, mutant):
    oracle, op = MUTANTS[mutant]
    env = {"RUNNER_PROBE_PATH": mutant_probe, "BURN_TORCH_DIFF_MUTANT": mutant}
    with WorkerPool(timeout_s=60, env=env) as pool:
        stats, causes = run_shard(ShardSpec(seed=SEED, max_programs=WITHIN, budget_s=3600), pool=pool)
    planted = [c for c in causes if c.signature not in unchanged]
    assert planted, [c.signature for c in causes]
    assert {c.op for c in planted} == {op}, [c.signature for c in planted]
    mine = [c for c in planted if c.op == op]
    assert [(c.oracle, c.side) for c in mine] == [(oracle, "burn")], [c.signature for c in causes]
    cause = mine[0]
    print(
        f"recall {mutant}: found at program {stats.first_seen[cause.signature] + 1} of {WITHIN}, "
        f"{len(mine)} case, {cause.statements} statements in it, shown by {stats.causes[cause.signature]} programs: "
        f"{cause.signature}"
    )
    assert cause.statements <= 8


def test_the_default_probe_has_no_mutant():
    """The variable that switches a mutant on does nothing to the probe everyone runs."""
    source = "p = param(3, values=[6.0, -5.0, 0.5])\ny = tanh(p)\nloss = sum(y)\nbackward(loss)\nobserve(y)\nobserve(p)"
    with WorkerPool(timeout_s=60, env={"BURN_TORCH_DIFF_MUTANT": "tanh-edge"}) as pool:
        judged = Localizer(pool).judge([(0, syntax.parse(source, where="t"))])[0]
    assert not judged.divergences and not judged.causes and judged.fully_judged
