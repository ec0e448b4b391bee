"""The policy for a missing tool (`tests/tools.py`): in CI the test fails naming the tool and how to
install it; elsewhere it is skipped with that reason, shown by `-ra`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tools

TESTS = Path(__file__).resolve().parent

pytest_plugins = ["pytester"]


@pytest.fixture
def no_tools_on_path(tmp_path, monkeypatch):
    """A PATH with nothing on it but an empty folder: no cargo, no chromium."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return empty


@pytest.mark.parametrize("value, ci", [("true", True), ("TRUE", True), ("1", True), ("", False), ("false", False)])
def test_ci_is_read_from_the_environment(monkeypatch, value, ci):
    monkeypatch.setenv("CI", value)
    assert tools.in_ci() is ci


def test_a_tool_on_the_path_is_found(tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    folder.mkdir()
    cargo = folder / "cargo"
    cargo.write_text("#!/bin/sh\n")
    cargo.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setenv("CI", "true")
    assert tools.require_tool("cargo", "to build") == str(cargo)


def test_a_missing_tool_fails_in_ci_naming_it_and_how_to_install_it(no_tools_on_path, monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception) as failed:
        tools.require_tool("cargo", "to build the Rust side")
    message = str(failed.value)
    assert "cargo is needed to build the Rust side but is not available here" in message
    assert "https://rustup.rs" in message and "CI=true" in message


def test_a_missing_tool_is_skipped_elsewhere_with_the_same_reason(no_tools_on_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        tools.require_tool("chromium", "to render the report")
    assert str(skipped.value) == (
        "chromium is needed to render the report but is not available here; "
        "scripts/bootstrap installs Debian's chromium package (apt-get install chromium)"
    )


def test_an_unreachable_registry_is_a_missing_tool(monkeypatch):
    monkeypatch.setattr(tools, "_registry_reachable", lambda: False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"crates\.io is needed to ask .*https://index\.crates\.io"):
        tools.require_tool("crates.io", "to ask the registry")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"crates\.io is needed"):
        tools.require_tool("crates.io", "to ask the registry")


def test_a_tool_found_only_by_trying_reports_itself_missing(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"mknod is needed to make a device file .*CAP_MKNOD"):
        tools.missing("mknod", "to make a device file")
    with pytest.raises(ValueError, match="only trying tells"):
        tools.require_tool("mknod", "to make a device file")


def test_an_unknown_tool_is_a_mistake_in_the_test_not_a_skip():
    with pytest.raises(ValueError, match=re.escape("unknown tool 'carg'; known: cargo, chromium, crates.io, mknod")):
        tools.require_tool("carg", "to build")


def test_every_tool_marker_is_declared_in_pyproject_and_names_a_known_tool():
    import tomllib

    declared = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    names = {line.split(":", 1)[0] for line in declared["markers"]}
    assert set(tools.MARKERS) <= names
    assert {tool for tool, _ in tools.MARKERS.values()} <= set(tools.TOOLS)


MARKED = """
import pytest

@pytest.fixture(scope="module")
def built():
    raise AssertionError("a fixture ran before the tool was asked for")

@pytest.mark.cargo
def test_needs_cargo(built):
    pass

def test_needs_nothing():
    pass
"""


@pytest.mark.parametrize("ci", [True, False])
def test_a_marked_test_asks_for_its_tool_before_its_fixtures(pytester, no_tools_on_path, monkeypatch, ci):
    """The real tests/conftest.py hook, in a small project of its own, with no cargo on PATH."""
    if ci:
        monkeypatch.setenv("CI", "true")
    else:
        monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\nmarkers =\n    cargo: builds with cargo\n")
    pytester.makeconftest(f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n" + (TESTS / "conftest.py").read_text())
    pytester.makepyfile(test_marked=MARKED)
    result = pytester.runpytest_inprocess("-ra", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert "a fixture ran before" not in out
    if ci:
        result.assert_outcomes(passed=1, errors=1)
        assert "cargo is needed to build the Rust side but is not available here" in out
        assert "CI=true" in out
    else:
        result.assert_outcomes(passed=1, skipped=1)
        assert "SKIPPED" in out and "cargo is needed to build the Rust side but is not available here" in out
