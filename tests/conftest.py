"""The tests' own hooks (the project-wide ones are in the root conftest.py).

A test marked `cargo`, `browser` or `registry` needs that tool: it is asked for
before any fixture of the test runs, failing the test in CI and skipping it
elsewhere with a visible reason (`tests/tools.py`).

A test marked `long` (a campaign, a build of its own) is left out unless the
`-m` expression names `long`: the README's test command stays within minutes,
and `python3 -m pytest -m long` runs them."""

import pytest
from tools import require_marked_tools


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    require_marked_tools(item)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "long" in (config.getoption("markexpr") or ""):
        return
    kept = [item for item in items if item.get_closest_marker("long") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.get_closest_marker("long")])
        items[:] = kept
