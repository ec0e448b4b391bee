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
    """A new divergence the campaign wrote as a case file, with its reproducers."""

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


class FuzzDocument(Model):
    """What one campaign did (`fuzz.json`)."""

    fuzz_schema_version: Literal[1]
    seed: Annotated[int, Field(ge=-(2**63), lt=2**64)] | None = None  # `--seed`: 0 to 2**64 - 1 (negative before)
    budget_s: NonNegativeMeasure | None = None
    seconds: NonNegativeMeasure = 0.0
    programs: NonNegativeInt = 0
    programs_per_second: NonNegativeMeasure = 0.0
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
