"""The tests' own hooks (the project-wide ones are in the root conftest.py).

A test marked `cargo`, `browser` or `registry` needs that tool: it is asked for
before any fixture of the test runs, failing the test in CI and skipping it
elsewhere with a visible reason (`tests/tools.py`)."""

import pytest
from tools import require_marked_tools


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    require_marked_tools(item)
