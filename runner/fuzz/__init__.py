"""Differential fuzzing that reports root causes: generated programs run under both
interpreters, every divergence is localized to the statement where it starts (a replay of
that statement alone on the recorded inputs), filtered for false positives, matched against
the known differences, and each new root cause is written once, as a case file with its
minimal program and standalone PyTorch and Rust reproducers.

- `rules`, `generate`: programs from the operation table (a rule registry for what the table
  cannot say)
- `pool`, `worker`: persistent worker processes, programs in batches, crash-proof
- `judge`: the comparisons and their false-positive filters
- `instrument`, `replay`, `localize`: where a divergence starts, and its root cause
- `known`: the registry of documented differences
- `campaign`, `shard`: one shard's search; `jobs`, `cluster`: shards on this machine or a Dask
  cluster, merged
- `record`: the case files and reproducers
- `command`: `burn-torch-diff fuzz`
"""
