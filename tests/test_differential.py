"""Every case's expectations, checked against real torch and the real burn probe.

The whole check runs once per session (each run in its own worker, at the
case's full size); each run and each pair is then one test with a readable id,
e.g. ``p10_ema[burn-detach]`` or ``p10_ema[torch-detach~burn-without]``.
"""

import pytest

from runner import cases
from runner.engine import check

CASES = [cases.load_case(path) for path in cases.all_cases()]


def _params():
    for case in CASES:
        for spec in case.runs:
            yield pytest.param(case.name, spec.key, id=f"{case.name}[{spec.framework}-{spec.mode}]")
        for pair in case.pairs:
            key = f"{pair.a} ~ {pair.b}"
            yield pytest.param(case.name, key, id=f"{case.name}[{pair.a.replace('/', '-')}~{pair.b.replace('/', '-')}]")


@pytest.fixture(scope="session")
def results():
    return check(CASES)


def _subject(e: dict) -> str:
    return e.get("pair") or f"{e['framework']}/{e['mode']}"


@pytest.mark.parametrize("case_name, subject", list(_params()))
def test_expectations_hold(results, case_name, subject):
    verdicts = [e for e in results["expectations"] if e["case"] == case_name and _subject(e) == subject]
    assert verdicts, f"no expectation was evaluated for {case_name} {subject}"
    failed = [e for e in verdicts if not e["passed"]]
    lines = [f"{e['check']}: expected {e['expected']!r}, observed {e['observed']!r}" for e in failed]
    if subject.count("/") == 1:  # a run: show its outcome too
        run = next(r for r in results["runs"] if r["case"] == case_name and f"{r['framework']}/{r['mode']}" == subject)
        lines.append(f"outcome {run['outcome']}, panic {run.get('panic')}, error {run.get('error')}, crash {run.get('crash')}")
    assert not failed, "\n".join(lines)


def test_results_document_has_the_promised_fields(results):
    assert results["schema_version"] == 1
    prov = results["provenance"]
    assert prov["burn"] == "0.22.1" and prov["torch"].startswith("2.15.0")
    for key in ("rustc", "python", "cpu", "git_commit", "started", "finished"):
        assert key in prov
    for run in results["runs"]:
        for key in ("case", "framework", "mode", "outcome", "panic", "checkpoints", "step_ms", "metrics"):
            assert key in run
        assert "slowdown_ratio" in run["metrics"]
        for c in run["checkpoints"]:
            assert {"step", "ms_per_step", "rss_delta_mib", "tracked", "flags"} <= set(c)
