"""Differential test runner between PyTorch and burn.

The same cases (``cases/*.toml``) run under both frameworks in isolated worker
processes; what each side did is parsed into one record per run, and the
semantic differences the case declares are checked against it.
"""

__version__ = "0.1.0"
