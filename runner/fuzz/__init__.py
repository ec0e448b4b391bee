"""Differential fuzzing: generated programs (hypothesis strategies, so that
shrinking comes with them) run under both interpreters; every divergence is
filtered for false positives, matched against the known differences, and a
new one is shrunk to a minimal program and written as a case file with
standalone PyTorch and Rust reproducers.

- `generate`: the strategies (well-typed programs, shapes consistent by construction)
- `pool`, `worker`: persistent worker processes, many programs each, crash-proof
- `judge`: divergences between the runs, with the false-positive filters
- `known`: the registry of documented differences
- `record`: found cases and reproducers
- `campaign`: the search loop, coverage and throughput
- `command`: `burn-torch-diff fuzz`
"""
