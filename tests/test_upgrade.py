"""The upgrade check: argument validation, the build folder, the installed probe
standing in for a build of its own release, classification, and real runs (a
same-version check, and a build-break against a stand-in burn crate that cannot
build the probe)."""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from runner import burn_sources as sources
from runner import cases, probe_build
from runner.errors import BadInput
from runner.metrics import measured
from runner.model.results import RawRun, from_data
from runner.model.upgrade import Build, Classified, UpgradeClass
from runner.paths import target_dir
from runner.upgrade.classify import classify
from runner.versions import parse as parse_version

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args, cache: Path | None = None, timeout=1800):
    env = dict(os.environ)
    if cache is not None:
        # Build folders in the test's own cache; compiled crates from the shared target dir.
        env["RUNNER_CACHE"] = str(cache)
        env["CARGO_TARGET_DIR"] = str(target_dir())
    return subprocess.run(
        [sys.executable, "-m", "runner", "upgrade-check", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def git_status():
    return subprocess.run(
        ["git", "status", "--porcelain", "Cargo.toml", "Cargo.lock", "rust_probe"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout


# ---- arguments --------------------------------------------------------------


@pytest.mark.parametrize("text", ["0.22.0", "0.23.0-pre.1", "1.0.0+build.5", "10.20.30"])
def test_versions_are_accepted(text):
    assert sources.parse(text, "--to") == sources.BurnSource(version=text)


def test_latest_is_kept_for_the_registry():
    assert sources.parse("latest", "--to") == "latest"


@pytest.mark.parametrize(
    "text",
    [
        "0.22",
        "v0.22.1",
        '0.22.1"',
        "0.22.1\n",
        "0.22.1 ",
        "0 .22.1",
        "=0.22.1",
        '0.22.1, path = "/etc"',
        "",
        "latest\n",
        "01.2.3",
    ],
)
def test_anything_else_is_bad_input_and_never_reaches_a_manifest(text):
    with pytest.raises(BadInput, match=r"not a semantic version|empty"):
        sources.parse(text, "--to")


def test_a_folder_must_hold_burns_manifest(tmp_path):
    with pytest.raises(BadInput, match=r"holds no Cargo\.toml of the burn crate"):
        sources.parse(str(tmp_path), "--to")
    crate = tmp_path / "crates" / "burn"
    crate.mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "burn"\nversion = "0.99.0"\n')
    assert sources.parse(str(tmp_path), "--to") == sources.BurnSource(path=crate.resolve())


def test_pinned_version_is_read_from_the_probe_manifest():
    assert sources.pinned_version() == "0.22.1"


def test_bad_version_exits_2_and_touches_nothing():
    before = git_status()
    out = run_cli("--to", '0.22.1"\n[patch]')
    assert out.returncode == 2, out.stderr
    assert "--to" in out.stderr and "not a semantic version" in out.stderr
    assert "Traceback" not in out.stderr
    assert git_status() == before


@pytest.mark.registry
def test_a_version_the_registry_lacks_exits_3():
    out = run_cli("--to", "99.0.0", "--steps", "400")
    assert out.returncode == 3, out.stderr
    assert "burn 99.0.0 is not available from the registry" in out.stderr


# ---- the build folder -----------------------------------------------------------


def test_manifest_copy_pins_the_version_and_renames_the_package():
    manifest = tomllib.loads(probe_build._manifest_for(sources.BurnSource(version="0.22.0")))
    assert manifest["package"]["name"] == manifest["lib"]["name"] == "rust_probe_upgrade"
    assert manifest["dependencies"]["burn"]["version"] == "=0.22.0"
    assert manifest["dependencies"]["burn"]["features"] == ["std", "flex", "autodiff", "optim"]
    assert "bin" not in manifest


def test_manifest_copy_for_a_path_escapes_it(tmp_path):
    odd = tmp_path / 'with "quote" and space'
    manifest = tomllib.loads(probe_build._manifest_for(sources.BurnSource(path=odd)))
    assert manifest["dependencies"]["burn"]["path"] == str(odd)
    assert "version" not in manifest["dependencies"]["burn"]


@pytest.mark.parametrize(
    "name", ["emoji 😀 folder", 'quote " and back\\slash', "line\nbreak\n[patch.crates-io]\nburn = { path = '/x' }"]
)
def test_manifest_copy_for_any_folder_name_is_valid_toml(tmp_path, name):
    odd = tmp_path / name
    manifest = tomllib.loads(probe_build._manifest_for(sources.BurnSource(path=odd)))
    assert manifest["dependencies"]["burn"]["path"] == str(odd)
    assert manifest["dependencies"]["burn"]["features"] == ["std", "flex", "autodiff", "optim"]
    assert set(manifest) == {"package", "lib", "features", "dependencies"}  # nothing injected, no [[bin]]


def test_a_path_that_is_not_utf8_is_bad_input(tmp_path):
    name = b"burn-\xff".decode("utf-8", "surrogateescape")  # as Python decodes such bytes from argv
    with pytest.raises(BadInput, match="not UTF-8"):
        sources.parse(str(tmp_path / name), "--to")


def test_upgrade_md_shows_a_hostile_path_as_text():
    from markdown_it import MarkdownIt

    from runner.model.upgrade import Build, UpgradeReport
    from runner.upgrade.command import render_markdown

    label = "path:/tmp/x\n# Owned\n![img](http://x/y.png)\n[click](javascript:alert(1)) <b>|</b>"
    report = UpgradeReport(
        from_=Build(source="0.22.1", ok=True, key="k", folder="-"),
        to=Build(source=label, ok=False, key="k", folder="-", errors=["error: `x`\n```\n# not a heading"]),
        rule="r",
        torch_runs="t",
        counts={},
        runs=[],
    )
    html = MarkdownIt("commonmark").enable("table").render(render_markdown(report))
    assert html.count("<h2>") == 1 and "<h1>" not in html
    assert "<img" not in html and "<a " not in html and "<b>" not in html
    assert "javascript:alert(1)" in html  # as text


# ---- the installed probe -----------------------------------------------------------


def test_the_installed_probe_was_built_from_this_checkouts_sources():
    from runner import _probe

    built, here = _probe.build_info()["sources"], probe_build.sources_digest()
    assert built == here, (
        f"the installed probe was built from other Rust sources (digest {built}) than this checkout's "
        f"({here}): run scripts/bootstrap"
    )


def test_the_sources_digest_is_fnv1a_over_length_prefixed_paths_and_bytes(tmp_path):
    # FNV-1a's published test vectors.
    assert probe_build.fnv1a64(b"") == 0xCBF29CE484222325
    assert probe_build.fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert probe_build.fnv1a64(b"foobar") == 0x85944171F73967E8
    files = {
        "Cargo.toml": b"[workspace]\n",
        "rust_probe/build.rs": b"fn main() {}\n",
        "rust_probe/src/a.rs": b"x",
        "rust_probe/src/a/b.rs": b"y",
    }
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    (tmp_path / "rust_probe" / "src" / "notes.md").write_text("not a source")
    # In the order of the paths' bytes ("a.rs" before "a/b.rs", unlike pathlib's order by parts);
    # the missing Cargo.lock and rust_probe/Cargo.toml are left out, as build.rs leaves them out.
    assert probe_build._probe_files(tmp_path) == [
        "Cargo.lock",
        "Cargo.toml",
        "rust_probe/Cargo.toml",
        "rust_probe/build.rs",
        "rust_probe/src/a.rs",
        "rust_probe/src/a/b.rs",
    ]
    fields = [field for name in sorted(files, key=str.encode) for field in (name.encode(), files[name])]
    stream = b"".join(len(field).to_bytes(8, "little") + field for field in fields)
    digest = probe_build.sources_digest(tmp_path)
    assert digest == f"{probe_build.fnv1a64(stream):016x}"
    # A byte moved across a file boundary is a change.
    (tmp_path / "rust_probe/src/a.rs").write_bytes(b"")
    (tmp_path / "rust_probe/src/a/b.rs").write_bytes(b"xy")
    assert probe_build.sources_digest(tmp_path) != digest


@pytest.fixture
def cargo_runs(monkeypatch, tmp_path):
    """The cargo commands a build runs, each failing at once instead of running (`rustc
    --version` still runs); build folders go into the test's cache."""
    monkeypatch.setenv("RUNNER_CACHE", str(tmp_path / "cache"))
    run = subprocess.run
    commands: list[list[str]] = []

    def no_cargo(command, *args, **kwargs):
        if command[0] != "cargo":
            return run(command, *args, **kwargs)
        commands.append(command)
        return subprocess.CompletedProcess(command, 101, stdout="", stderr="error: not run by this test\n")

    monkeypatch.setattr(probe_build.subprocess, "run", no_cargo)
    return commands


def test_a_side_of_the_installed_probes_release_is_the_installed_probe(cargo_runs, tmp_path):
    from runner import _probe

    result = probe_build.build(sources.BurnSource(version=sources.pinned_version()))
    assert cargo_runs == []
    assert result.installed and result.ok and not result.cached, result
    assert result.probe == _probe.__file__ and result.burn == sources.pinned_version()
    assert "burn-autodiff" in result.burn_family and set(result.burn_family.values()) == {result.burn}
    assert not (tmp_path / "cache").exists()  # no build folder, no build.json


def _sources_edited(monkeypatch, tmp_path):
    monkeypatch.setattr(probe_build, "sources_digest", lambda root=None: "0" * 16)
    return sources.BurnSource(version=sources.pinned_version())


def _no_installed_probe(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "runner._probe", None)  # importing it raises ImportError
    return sources.BurnSource(version=sources.pinned_version())


def _a_burn_crate_of_the_lock_elsewhere(monkeypatch, tmp_path):
    # A side's build pins every burn crate to its release: a probe built from a lock that
    # has one at another release is not that build.
    family = probe_build._burn_family
    monkeypatch.setattr(probe_build, "_burn_family", lambda lock: {**family(lock), "burn-core": "0.22.0"})
    return sources.BurnSource(version=sources.pinned_version())


def _a_local_checkout(monkeypatch, tmp_path):
    return sources.BurnSource(path=tmp_path / "burn")


def _another_release(monkeypatch, tmp_path):
    return sources.BurnSource(version="0.22.0")


@pytest.mark.parametrize(
    "side",
    [_sources_edited, _no_installed_probe, _a_burn_crate_of_the_lock_elsewhere, _a_local_checkout, _another_release],
)
def test_a_side_the_installed_probe_is_not_is_built(cargo_runs, monkeypatch, tmp_path, side):
    result = probe_build.build(side(monkeypatch, tmp_path))
    assert not result.installed
    assert cargo_runs and cargo_runs[-1][:2] == ["cargo", "rustc"]
    assert not result.ok and result.errors == ["error: not run by this test"]


def test_a_sides_record_says_where_its_probe_came_from():
    from runner.model.upgrade import UpgradeReport
    from runner.upgrade.command import render_markdown, render_table

    installed = Build(source="0.22.1", ok=True, key="k", folder="-", burn="0.22.1", installed=True)
    built = Build(source="0.23.0", ok=True, key="k", folder="-", burn="0.23.0", seconds=41.2)
    report = UpgradeReport(from_=installed, to=built, rule="r", torch_runs="t", counts={}, runs=[])
    table = render_table(report)
    assert "burn 0.22.1 (lock: 0.22.1): ok, the installed probe" in table
    assert "burn 0.23.0 (lock: 0.23.0): ok, 41 s" in table
    assert "| 0.22.1 | 0.22.1 | ok (the installed probe) |" in render_markdown(report)
    # A record written before the field existed still reads: a build of its own.
    old = Build.model_validate_json('{"source": "0.22.1", "ok": true, "key": "k", "folder": "-", "cached": true}')
    assert old.installed is False and old.cached is True


# ---- classification -----------------------------------------------------------

CASE = cases.load_case(cases.resolve("p10_ema"))


def rec(step_ms, tracked, outcome="ok", panic=None, rss=0.0, framework="burn"):
    n = len(step_ms)
    r = {
        "case": "p10_ema",
        "framework": framework,
        "mode": "m",
        "outcome": outcome,
        "step_ms": step_ms,
        "checkpoints": [{"step": n, "ms_per_step": step_ms[-1], "rss_delta_mib": 1.0, "tracked": tracked}],
        "rss_samples": [[s, rss * s] for s in range(100, n + 1, 100)],
    }
    if panic is not None:
        r["panic"] = panic
    return measured(from_data(RawRun, r), CASE)


FLAT = [1.0 + 0.01 * (i % 7) for i in range(2000)]
GROWING = [1.0 + 0.02 * i for i in range(2000)]
PANIC = {"message": "graph tape has already been consumed", "step": 3, "phase": "backward"}


def torch_side():
    return {
        ("p10_ema", f"torch/{m}"): rec(FLAT, False, framework="torch") for m in ("detach", "target", "log", "ema-only")
    }


def burn_side(**overrides):
    side = {
        ("p10_ema", f"burn/{m}"): rec(FLAT, m in ("detach", "log", "ema-only"))
        for m in ("without", "target-without", "log", "ema-only")
    }
    side[("p10_ema", "burn/detach")] = rec(GROWING, True, rss=0.002)
    side[("p10_ema", "burn/target")] = rec(FLAT[:2], True, outcome="panic", panic=PANIC)
    for mode, record in overrides.items():
        side[("p10_ema", f"burn/{mode}")] = record
    return side


def classes_of(result):
    return {row.run: row.klass for row in result}


def test_the_same_behaviour_is_same_everywhere():
    result = classify([CASE], burn_side(), burn_side(), torch_side(), {})
    assert set(classes_of(result).values()) == {"same"}


def test_detach_no_longer_tracked_is_fixed():
    fixed = burn_side(detach=rec(FLAT, False))
    result = classify([CASE], burn_side(), fixed, torch_side(), {})
    assert classes_of(result)["burn/detach"] == "fixed"
    row = next(r for r in result if r.run == "burn/detach")
    assert any("no longer differs in tracked: True -> False" in f for f in row.findings)
    assert any(f.startswith("performance changed") for f in row.findings)


def test_target_no_longer_panicking_is_fixed_and_its_outcome_change_is_listed():
    result = classify([CASE], burn_side(), burn_side(target=rec(FLAT, False)), torch_side(), {})
    row = next(r for r in result if r.run == "burn/target")
    assert row.klass == "fixed"
    assert any("outcome panic -> ok" in f for f in row.findings)


def test_without_starting_to_track_is_a_new_difference():
    result = classify([CASE], burn_side(), burn_side(without=rec(FLAT, True)), torch_side(), {})
    assert classes_of(result)["burn/without"] == "new difference"


def test_panic_step_or_text_change_is_an_outcome_change():
    moved = dict(PANIC, step=2)
    result = classify([CASE], burn_side(), burn_side(target=rec(FLAT[:1], True, "panic", moved)), torch_side(), {})
    row = next(r for r in result if r.run == "burn/target")
    assert row.klass == "outcome changed" and "panic step 3 -> 2" in row.findings[0]


def test_a_slower_flat_run_is_a_performance_change():
    slower = rec([3 * x for x in FLAT], False)
    result = classify([CASE], burn_side(), burn_side(without=slower), torch_side(), {})
    assert classes_of(result)["burn/without"] == "performance changed"


def test_a_side_that_did_not_build_is_a_build_break_for_every_burn_run():
    result = classify([CASE], burn_side(), None, torch_side(), {"0.21.0": ["src/p10.rs:1:5: error[E0432]: x"]})
    assert len(result) == 6 and set(classes_of(result).values()) == {"build-break"}
    assert "error[E0432]" in result[0].findings[0]


# ---- real runs ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.cargo
@pytest.mark.long  # the whole catalogue twice (about a minute): `python3 -m pytest -m long`
def test_same_version_on_both_sides_is_all_same(tmp_path):
    out = run_cli("p10_ema", "--from", "0.22.1", "--to", "0.22.1", "--steps", "450", "-q", "--out", str(tmp_path))
    report = json.loads((tmp_path / "upgrade.json").read_text())
    assert out.returncode == 0, out.stdout + out.stderr
    assert report["counts"] == {"same": 6}
    assert report["from"]["burn"] == report["to"]["burn"] == "0.22.1"
    assert report["from"]["installed"] and report["to"]["installed"]  # nothing built
    assert (tmp_path / "results-from.json").exists() and (tmp_path / "results-to.json").exists()
    assert "| same | p10_ema | burn/detach |" in (tmp_path / "upgrade.md").read_text()


@pytest.mark.slow
@pytest.mark.cargo
def test_a_burn_that_cannot_build_the_probe_is_reported_cleanly(tmp_path):
    fake = tmp_path / "fake-burn"
    (fake / "src").mkdir(parents=True)
    (fake / "Cargo.toml").write_text(
        '[package]\nname = "burn"\nversion = "0.0.1"\nedition = "2021"\n\n'
        "[features]\nstd = []\nflex = []\nautodiff = []\noptim = []\n"
    )
    (fake / "src" / "lib.rs").write_text("// a stand-in burn with none of the API the probe uses\n")
    # A small case (two burn runs of a few statements). The from side, 0.22.1, is the installed
    # probe (nothing built); the stand-in's side is built (and fails in seconds) in a build
    # folder of this test's own cache.
    out = run_cli(
        "squeeze_non_singleton",
        "--from",
        "0.22.1",
        "--to",
        str(fake),
        "-q",
        "--out",
        str(tmp_path / "out"),
        cache=tmp_path / "cache",
    )
    assert out.returncode == 3, out.stdout + out.stderr
    report = json.loads((tmp_path / "out" / "upgrade.json").read_text())
    assert report["to"]["ok"] is False and report["from"]["ok"] is True
    assert report["from"]["installed"] is True, "the from side was built: run scripts/bootstrap if the probe is stale"
    assert report["to"]["installed"] is False
    assert "probe against burn 0.22.1: the installed probe" in out.stderr
    assert not (tmp_path / "cache" / "upgrade" / "burn-0.22.1").exists()
    assert 1 <= len(report["to"]["errors"]) <= probe_build.MAX_ERRORS
    assert any("error" in e and "burn" in e for e in report["to"]["errors"]), report["to"]["errors"]
    assert report["counts"] == {"build-break": 2}
    assert "BUILD FAILED" in out.stdout and "build-break (2)" in out.stdout


@pytest.mark.registry
def test_latest_asks_the_registry_not_this_workspaces_lock():
    # Inside this workspace `cargo info burn` answers with the locked 0.22.1;
    # the registry has newer ones (0.23.0-pre.1 when this was written).
    resolved = sources.resolve("latest")
    assert resolved.version is not None and parse_version(resolved.version) > parse_version("0.22.1")


def test_only_claimed_properties_are_compared_with_torch():
    # p10 makes no torch-vs-burn claim about RSS growth (torch's slope is noise):
    # burn's RSS starting to grow is not a "new difference" against torch...
    leaky = rec(FLAT, False, rss=0.005)
    result = classify([CASE], burn_side(), burn_side(**{"target-without": leaky}), torch_side(), {})
    assert classes_of(result)["burn/target-without"] == "same"
    # ...while a claimed property still is.
    tracked = rec(FLAT, True)
    result = classify([CASE], burn_side(), burn_side(**{"target-without": tracked}), torch_side(), {})
    assert classes_of(result)["burn/target-without"] == "new difference"


def test_the_classes_carry_their_order_and_their_spelling():
    """The order a run's class is chosen in (the first that applies), and the words upgrade.json
    has always used for them: a file written before the enum still reads."""
    assert [c.value for c in UpgradeClass] == [
        "build-break",
        "fixed",
        "new difference",
        "outcome changed",
        "performance changed",
        "same",
    ]
    assert UpgradeClass.by_findings() == [
        UpgradeClass.FIXED,
        UpgradeClass.NEW_DIFFERENCE,
        UpgradeClass.OUTCOME_CHANGED,
        UpgradeClass.PERFORMANCE_CHANGED,
    ]
    row = Classified.model_validate_json('{"case": "c", "run": "burn/x", "klass": "new difference"}')
    assert row.klass is UpgradeClass.NEW_DIFFERENCE and f"{row.klass}" == "new difference"
    assert json.loads(row.model_dump_json())["klass"] == "new difference"
