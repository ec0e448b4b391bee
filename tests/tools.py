"""One policy for a test that needs something outside the project (issue 16).

A test that needs an external tool asks for it with `require_tool(name, why)`
(or, when the only way to know is to try, reports `missing(name, why)`):

- in CI (the environment variable `CI` is `true`, as GitHub Actions and
  `.ci/run` callers set it) the test FAILS, naming the tool and how to install
  it: CI's bootstrap provides every tool, so a missing one must not turn a test
  off unseen;
- anywhere else the test is SKIPPED with that same reason, which pytest's `-ra`
  (on in `pyproject.toml`) prints in the summary.

The markers that stand for a tool (`cargo`, `browser`, `registry`) ask for it
before any fixture runs (`tests/conftest.py` calls `require_marked_tools`), so a
marked test needs no call of its own.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import NoReturn

import pytest


def in_ci() -> bool:
    """Whether this is a CI run (`CI=true`, in any case; `1` and `yes` count too)."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


@cache
def _registry_reachable() -> bool:
    """Whether crates.io's index answers a TCP connection (asked once per session)."""
    try:
        with socket.create_connection(("index.crates.io", 443), timeout=10):
            return True
    except OSError:
        return False


def _executable(name: str) -> Callable[[], str | None]:
    return lambda: shutil.which(name)


def _registry() -> str | None:
    cargo = shutil.which("cargo")
    return "https://index.crates.io" if cargo and _registry_reachable() else None


def _module(name: str) -> Callable[[], str | None]:
    def find() -> str | None:
        spec = importlib.util.find_spec(name)
        return spec.origin if spec is not None else None

    return find


@dataclass(frozen=True)
class Tool:
    find: Callable[[], str | None] | None  # where the tool is, or None; None here: only trying tells
    install: str


TOOLS: dict[str, Tool] = {
    "cargo": Tool(_executable("cargo"), "install Rust 1.95 or newer with cargo (https://rustup.rs)"),
    "chromium": Tool(
        _executable("chromium"),
        "scripts/bootstrap installs Debian's chromium package (apt-get install chromium)",
    ),
    "crates.io": Tool(
        _registry,
        "cargo and network access to https://index.crates.io (cargo asks it for burn's releases)",
    ),
    "mknod": Tool(
        None,
        "permission to make device files: run the tests as root, or in a container with CAP_MKNOD",
    ),
}

# The markers that stand for a tool (pyproject.toml's [tool.pytest.ini_options] markers).
MARKERS: dict[str, tuple[str, str]] = {
    "cargo": ("cargo", "to build the Rust side"),
    "browser": ("chromium", "to render the report in a headless browser"),
    "registry": ("crates.io", "to ask the registry about burn's releases"),
}


def _tool(name: str) -> Tool:
    try:
        return TOOLS[name]
    except KeyError:
        raise ValueError(f"unknown tool {name!r}; known: {', '.join(sorted(TOOLS))}") from None


def missing(name: str, why: str) -> NoReturn:
    """`name` is not available: fail in CI, skip elsewhere; the message names the tool and how to get it."""
    tool = _tool(name)
    reason = f"{name} is needed {why} but is not available here; {tool.install}"
    if in_ci():
        pytest.fail(f"{reason} (CI=true: a missing tool fails the test instead of skipping it)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_tool(name: str, why: str) -> str:
    """Where `name` is (a path, or the registry's address); if it is not there, `missing(name, why)`."""
    tool = _tool(name)
    if tool.find is None:
        raise ValueError(f"{name}: only trying tells whether it is available; call missing() when it fails")
    found = tool.find()
    if found is None:
        missing(name, why)
    return found


def require_marked_tools(item: pytest.Item) -> None:
    """Ask for the tool of each of the test's tool markers (`cargo`, `browser`, `registry`)."""
    for marker, (name, why) in MARKERS.items():
        if item.get_closest_marker(marker) is not None:
            require_tool(name, why)
