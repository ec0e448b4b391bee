"""The case collector (`runner.pytest_plugin`): pytest turns `cases/*.toml` into tests."""

pytest_plugins = ["runner.pytest_plugin"]
