"""The fuzz summary (`fuzz.json`, written by `burn-torch-diff fuzz`, shown by
`report`) as a typed model: the fuzzer builds it, the report validates it.

Written with `fuzz_schema_version` 1 since the first campaign; every key has
a default, so summaries written before this model (and the smaller ones tests
write) still read. Text is bounded (pydantic refuses a lone surrogate, naming
its key), counts are non-negative integers.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from .base import Model, NonNegativeInt, NonNegativeMeasure, ShallowJson
from .results import Provenance

# Longer than any signature, path or message the fuzzer writes (messages are cut at 300).
MAX_TEXT = 10_000

Text = Annotated[str, Field(max_length=MAX_TEXT)]
Counts = dict[Text, NonNegativeInt]


class Divergences(Model):
    """Divergences met, by class (`new`: no case documents them) or by known difference (`known`)."""

    new: Counts = {}
    known: Counts = {}


class Coverage(Model):
    """How often each generated operation ran, and how many of the operation pairs."""

    ops: Counts = {}
    below: list[Text] = []  # operations that ran fewer than `at_least` times
    at_least: NonNegativeInt = 10
    pairs_seen: NonNegativeInt = 0
    pairs_possible: NonNegativeInt = 0


class KnownDifference(Model):
    id: Text
    title: Text
    case: Text


class FoundEntry(Model):
    """A root cause the campaign wrote as a case file, with its reproducers.

    Its `signature` is `oracle:operation[.attributes]:region:side` (`values:tanh:|x|>=3:burn`);
    `class` is the oracle. Summaries written before root causes have only the first fields."""

    model_config = ConfigDict(validate_by_name=True, serialize_by_alias=True)

    signature: Text
    class_: Annotated[Text, Field(alias="class")]
    label: Text | None = None
    detail: dict[Text, ShallowJson] = {}
    shrink_evaluations: NonNegativeInt = 0
    flaky: bool = False
    case: Text  # the case file
    torch: Text = ""  # the PyTorch reproducer (or why it was not written)
    rust: Text = ""  # the Rust reproducer's crate (or why it was not written)
    op: Text | None = None  # the operation it is attributed to
    attributes: Text = ""  # the attributes that matter
    region: Text = ""  # where in the input space it shows (`all`, `|x|>=3`, `recorded`, ...)
    side: Text = ""  # the side farther from float64 (burn, torch, both)
    statement: NonNegativeInt | None = None  # the statement of the generated program it starts at
    words: Text = ""  # what was observed, in words and numbers
    statements: NonNegativeInt = 0  # statements of the case's minimal program (observations left out)
    generated_statements: NonNegativeInt = 0  # statements of the generated program
    first_program: NonNegativeInt | None = None  # the campaign's first program that showed it
    programs: NonNegativeInt = 0  # the campaign's programs that showed it


class FuzzDocument(Model):
    """What one campaign did (`fuzz.json`)."""

    fuzz_schema_version: Literal[1]
    seed: Annotated[int, Field(ge=-(2**63), lt=2**64)] | None = None  # `--seed`: 0 to 2**64 - 1 (negative before)
    budget_s: NonNegativeMeasure | None = None
    seconds: NonNegativeMeasure = 0.0
    programs: NonNegativeInt = 0
    programs_per_second: NonNegativeMeasure = 0.0
    # Programs every statement of which was judged: compared with agreeing inputs, or replayed
    # alone (a known difference no longer hides the rest of its program).
    fully_judged: NonNegativeInt = 0
    replays: NonNegativeInt = 0  # statements replayed alone
    jobs: NonNegativeInt = 1  # shards that ran (local processes, or the cluster's worker threads)
    cluster: Text | None = None  # the Dask scheduler's address, for a campaign across machines
    shrink: bool = True
    shard_failures: list[Text] = []
    shrink_evaluations: NonNegativeInt = 0
    outcomes: Counts = {}  # "torch outcome/burn outcome" -> programs
    divergences: Divergences = Divergences()
    filtered: Counts = {}
    gradcheck: Counts = {}
    worker_crashes: NonNegativeInt = 0
    worker_timeouts: NonNegativeInt = 0
    coverage: Coverage = Coverage()
    known_differences: list[KnownDifference] = []
    found: list[FoundEntry] = []
    provenance: Provenance | None = None
    burn: Text = ""  # "installed probe", or the other burn the campaign ran against
    # A campaign a signal stopped: what it found until then (the counts of the programs it ran).
    partial: bool = False
    partial_reason: Text | None = None

    def dump_json(self) -> str:
        return self.model_dump_json(indent=1) + "\n"
