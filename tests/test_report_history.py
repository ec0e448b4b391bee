"""History folder, change detection against the previous run of the same
machine, several machines in one report, and the nightly exit code."""

from __future__ import annotations

import copy
import json

import pytest
from report_fixtures import SAMPLE_1, SAMPLE_2, load, on_aarch64, only_passing, report, save, shifted

from runner.model.results import ResultsDocument
from runner.report import changes as changes_module
from runner.report.history import MARKER, NAME
from runner.report.machines import fingerprint
from runner.results import load_results, validate


def test_fingerprint_is_stable_and_only_about_the_machine():
    a, b = load(SAMPLE_1), load(SAMPLE_2)
    assert fingerprint(a["provenance"]) == fingerprint(b["provenance"])  # same host, other run
    later = copy.deepcopy(a["provenance"])
    later.update(burn="0.23.0", torch="2.16.0", started="2027-01-01T00:00:00+00:00", git_commit="x")
    assert fingerprint(later) == fingerprint(a["provenance"])
    for key, value in (("cpu", "Other CPU"), ("machine", "aarch64"), ("cores", 64), ("system", "Darwin 24")):
        other = {**a["provenance"], key: value}
        assert fingerprint(other) != fingerprint(a["provenance"]), key
    assert len(fingerprint(a["provenance"])) == 10


def test_two_real_runs_of_one_machine_are_compared(tmp_path, capsys):
    out = tmp_path / "out"
    assert report("--from-results", SAMPLE_1, "--out", out) == 1
    assert report("--from-results", SAMPLE_2, "--out", out) == 1  # things changed
    history = out / "history"
    entries = sorted(p.name for p in history.iterdir() if p.name != MARKER)
    fp = fingerprint(load(SAMPLE_1)["provenance"])
    assert entries == [f"20261129T070238Z__burn-0.22.1__{fp}.json", f"20261129T070829Z__burn-0.22.1__{fp}.json"]
    assert all(NAME.match(name) for name in entries)
    assert load_results(history / entries[0]) == load_results(SAMPLE_1)

    md = (out / "report.md").read_text()
    assert f"compared with `{entries[0]}` (burn 0.22.1, commit 2a4b3d9e6e): 11 change(s)" in md
    # what really changed between the two runs: torch's RSS growth came back under 1 MiB/1000 steps...
    assert (
        "expectation flipped: p10_ema torch/detach rss_growth_mib_per_1000: does not hold -> holds "
        "(expected <= 1; observed 1.96 -> -0.815)"
    ) in md
    assert md.count("expectation flipped") == 3
    # ...the case file was edited in between (commit 401a3e9): slowdown bounds 1.5 -> 2 on 8 runs...
    assert (
        "expectation changed: p10_ema burn/log slowdown_ratio: expected <= 1.5 -> expected <= 2 "
        "(holds both times; observed 1.01 -> 0.933)"
    ) in md
    assert md.count("expectation changed") == 8
    # ...while burn's ema-only step (0.1 ms) ran 1.64x faster in the reference window:
    # under the rule's 2x floor (machine drift), so not a change
    assert md.count("step time changed") == 0
    assert "ATTENTION: 11 changes since the previous run" in capsys.readouterr().out


def test_nothing_changed_and_all_hold_exits_0(tmp_path):
    yesterday = save(tmp_path / "yesterday.json", shifted(load(SAMPLE_2), days=-1))
    assert report("--from-results", yesterday, "--out", tmp_path / "out") == 0
    assert report("--from-results", SAMPLE_2, "--out", tmp_path / "out") == 0
    md = (tmp_path / "out" / "report.md").read_text()
    assert "**OK: nothing changed since the previous run and every expectation holds**" in md
    assert "20261128T070829Z" in md and ": nothing changed" in md


def test_reporting_the_same_results_again_compares_with_the_run_before(tmp_path):
    out = tmp_path / "out"
    report("--from-results", SAMPLE_1, "--out", out)
    report("--from-results", SAMPLE_2, "--out", out)
    before = sorted((out / "history").iterdir())
    assert report("--from-results", SAMPLE_2, "--out", out) == 1
    assert sorted((out / "history").iterdir()) == before  # not recorded twice
    assert "compared with `20261129T070238Z" in (out / "report.md").read_text()


def test_history_folder_can_live_elsewhere(tmp_path):
    report("--from-results", SAMPLE_2, "--out", tmp_path / "a", "--history", tmp_path / "h")
    assert not (tmp_path / "a" / "history").exists()
    assert (tmp_path / "h" / MARKER).exists() and len(list((tmp_path / "h").iterdir())) == 2


def typed(doc: dict) -> ResultsDocument:
    return validate(doc, "test fixture")


def by_kind(found):
    return {(c.kind, c.subject) for c in found}


def test_every_kind_of_change_is_listed():
    before = load(SAMPLE_2)
    after = copy.deepcopy(before)  # TEST fixture: edits of a real run, one per kind of change
    runs = {(r["framework"], r["mode"]): r for r in after["runs"]}
    runs["burn", "log"]["outcome"] = "crash"
    runs["burn", "log"]["crash"] = {"signal": "SIGSEGV", "exit_code": None, "stderr_tail": ""}
    runs["burn", "target"]["panic"]["message"] = "some other panic"
    runs["torch", "log"]["metrics"]["tracked"] = True
    detach = runs["burn", "detach"]
    first, last = detach["metrics"]["last_window"]
    detach["step_ms"][first - 1 : last] = [v * 3 for v in detach["step_ms"][first - 1 : last]]
    after["runs"].remove(runs["torch", "ema-only"])
    extra = copy.deepcopy(runs["burn", "without"])
    extra["mode"] = "new-mode"
    after["runs"].append(extra)
    flipped = next(e for e in after["expectations"] if e["check"] == "slowdown_ratio")
    flipped["passed"] = False
    edited = next(e for e in after["expectations"] if e["check"] == "panic_step")
    edited["expected"] = 4
    after["expectations"].pop()

    found = changes_module.changes(typed(before), typed(after))
    assert by_kind(found) == {
        ("outcome changed", "p10_ema burn/log"),
        ("panic changed", "p10_ema burn/target"),
        ("tracked changed", "p10_ema torch/log"),
        ("step time changed", "p10_ema burn/detach (last window median)"),
        ("run vanished", "p10_ema torch/ema-only"),
        ("run appeared", "p10_ema burn/new-mode"),
        ("expectation flipped", "p10_ema torch/detach slowdown_ratio"),
        ("expectation changed", "p10_ema burn/target panic_step"),
        ("expectation vanished", "p10_ema torch/target ~ burn/target-without pair same: grows"),
    }
    assert changes_module.changes(typed(before), typed(copy.deepcopy(before))) == []


def test_step_time_within_noise_is_not_a_change():
    before = load(SAMPLE_2)
    after = copy.deepcopy(before)  # TEST fixture: burn/detach's last window 20 % slower
    detach = next(r for r in after["runs"] if (r["framework"], r["mode"]) == ("burn", "detach"))
    first, last = detach["metrics"]["last_window"]
    detach["step_ms"][first - 1 : last] = [v * 1.2 for v in detach["step_ms"][first - 1 : last]]
    assert changes_module.changes(typed(before), typed(after)) == []


def test_two_machines_give_one_column_set_each(tmp_path):
    arm_doc = on_aarch64(load(SAMPLE_2))  # provenance-only TEST fixture
    arm = save(tmp_path / "arm.json", arm_doc)
    x86_fp, arm_fp = fingerprint(load(SAMPLE_2)["provenance"]), fingerprint(arm_doc["provenance"])
    history = tmp_path / "history"
    yesterday = [
        save(tmp_path / "x86_y.json", shifted(load(SAMPLE_2), days=-1)),
        save(tmp_path / "arm_y.json", shifted(arm_doc, days=-1)),
    ]
    assert report("--from-results", *yesterday, "--out", tmp_path / "y", "--history", history) == 0

    out = tmp_path / "out"
    assert report("--from-results", SAMPLE_2, arm, "--out", out, "--history", history) == 0
    md = (out / "report.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| case | run |"))
    assert header.count("outcome") == 2
    assert f"x86_64 {x86_fp[:6]}: outcome" in header and f"aarch64 {arm_fp[:6]}: outcome" in header
    for fp in (x86_fp, arm_fp):  # each machine against its own previous run
        assert (
            f"{fp[:6]}` compared with `20261128T070829Z__burn-0.22.1__{fp}.json` "
            "(burn 0.22.1, commit 401a3e9da5): nothing changed"
        ) in md
    html = (out / "report.html").read_text()
    for fp in (x86_fp, arm_fp):
        assert f'id="steps-p10_ema-{fp}"' in html and f'id="rss-p10_ema-{fp}"' in html
    assert html.count('<svg class="plot"') == 2 * (2 * 4 + 2)  # per machine: 4 pairs x (steps, memory) + 2 full
    bundle = json.loads((out / "results.json").read_text())
    assert [d["provenance"]["machine"] for d in bundle["results"]] == ["x86_64", "aarch64"]
    names = sorted(p.name for p in history.iterdir() if p.name != MARKER)
    assert len(names) == 4 and {n.split("__")[2][:10] for n in names} == {x86_fp, arm_fp}

    # the bundle reads back: the same runs, not recorded twice, compared as before
    assert report("--from-results", out / "results.json", "--out", tmp_path / "again", "--history", history) == 0
    assert (tmp_path / "again" / "report.md").read_text().count(
        "(burn 0.22.1, commit 401a3e9da5): nothing changed"
    ) == 2
    assert sorted(p.name for p in history.iterdir() if p.name != MARKER) == names


def test_a_machine_that_vanished_last_night_is_compared_with_its_last_run(tmp_path):
    out = tmp_path / "out"
    arm_old = save(tmp_path / "arm_old.json", on_aarch64(shifted(load(SAMPLE_1), days=-2)))
    report("--from-results", arm_old, "--out", out)
    report("--from-results", SAMPLE_1, "--out", out)  # only the x86_64 host reported
    arm_new = save(tmp_path / "arm_new.json", on_aarch64(load(SAMPLE_2)))
    assert report("--from-results", arm_new, "--out", out) == 1
    md = (out / "report.md").read_text()
    assert "compared with `20261127T070238Z" in md


def test_failing_expectations_alone_make_exit_1(tmp_path):
    passing = save(tmp_path / "passing.json", only_passing(load(SAMPLE_1)))
    assert report("--from-results", passing, "--out", tmp_path / "o1") == 0
    assert report("--from-results", SAMPLE_1, "--out", tmp_path / "o2") == 1


# ---- reports at the same time ---------------------------------------------------


def _same_start_other_commits(n: int) -> list[ResultsDocument]:
    docs = []
    for i in range(n):
        doc = load(SAMPLE_2)
        doc["provenance"]["git_commit"] = f"{i:040d}"
        docs.append(validate(doc, f"doc {i}"))
    return docs


def test_reports_writing_one_history_at_once_each_get_their_own_entry(tmp_path):
    """Threads stand in for processes: `flock` locks belong to open file
    descriptions, so two threads that each open the folder exclude each other."""
    import threading

    from runner.report.history import History
    from runner.report.machines import group

    folder = tmp_path / "history"
    machines = [group([(doc, "x")])[0] for doc in _same_start_other_commits(6)]
    barrier = threading.Barrier(len(machines))
    paths, errors = [], []

    def add(machine):
        try:
            barrier.wait()
            paths.append(History(folder).add(machine))
        except BaseException as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=add, args=(m,)) for m in machines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(paths)) == 6
    entries = sorted(p.name for p in folder.iterdir() if p.name != MARKER)
    assert len(entries) == 6 and [load_results(folder / e)[0] for e in entries]


@pytest.mark.slow
def test_three_report_processes_at_once_record_three_entries(tmp_path):
    import subprocess
    import sys

    files = []
    for i, doc in enumerate(_same_start_other_commits(3)):
        files.append(save(tmp_path / f"r{i}.json", json.loads(doc.model_dump_json())))
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "runner",
                "report",
                "--from-results",
                str(f),
                "--out",
                str(tmp_path / f"out{i}"),
                "--history",
                str(tmp_path / "history"),
            ],
            cwd=SAMPLE_2.parent.parent.parent,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, f in enumerate(files)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors  # the same runs: nothing changed, nothing fails
    entries = [p for p in (tmp_path / "history").iterdir() if p.name != MARKER]
    assert len(entries) == 3
