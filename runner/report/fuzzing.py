"""The fuzz section's data: what the last `burn-torch-diff fuzz` run did
(`fuzz.json`, `runner.model.fuzz`), read defensively. A missing summary means
no section; one that cannot be read or does not fit the model is said on the
page (which file, which key) and never changes the exit code. The text both
renderings show is made here, each string cut to a bounded length (a summary
may hold anything); the renderings escape it for their own markup."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..errors import BadInput
from ..inputs import read_json
from ..model.base import describe_errors
from ..model.fuzz import FoundEntry, FuzzDocument
from ..wording import short

DEFAULT = Path("reports") / "fuzz" / "fuzz.json"
# A fuzz summary is a few KiB; far more is not one.
MAX_BYTES = 16 << 20
# At most this many characters of any one string from the summary, and this many entries of a list or count.
TEXT_LIMIT = 200
ENTRY_LIMIT = 30


@dataclass(frozen=True)
class FuzzSection:
    """The fuzz summary the report shows, or why it could not be read (`error`)."""

    source: str
    doc: FuzzDocument | None = None
    error: str | None = None


def read(path: Path | None) -> FuzzSection | None:
    if path is None or not Path(path).exists():
        return None
    source = short(str(path), TEXT_LIMIT)
    try:
        data = read_json(Path(path), "fuzz summary", limit=MAX_BYTES)
    except BadInput as err:
        return FuzzSection(source, error=short(str(err), 4 * TEXT_LIMIT))
    if not isinstance(data, dict) or data.get("fuzz_schema_version") != 1:
        return FuzzSection(source, error=f"{source}: not a fuzz summary (fuzz_schema_version 1)")
    try:
        return FuzzSection(source, FuzzDocument.model_validate(data))
    except ValidationError as err:
        lines = describe_errors(err, FuzzDocument, limit=3)
        return FuzzSection(source, error=f"{source}: " + f"; {source}: ".join(lines))


def text(value: object) -> str:
    return short(str(value), TEXT_LIMIT)


def listed(items: list[str]) -> str:
    shown = [text(x) for x in items[:ENTRY_LIMIT]]
    more = f", ... and {len(items) - ENTRY_LIMIT} more" if len(items) > ENTRY_LIMIT else ""
    return ", ".join(shown) + more


def counts_text(counts: dict[str, int]) -> str:
    return listed([f"{k} {n}" for k, n in sorted(counts.items())]) or "none"


def coverage_text(doc: FuzzDocument) -> str:
    cov = doc.coverage
    rare = f"; rare: {listed(cov.below)}" if cov.below else f", each at least {cov.at_least} times"
    return f"{len(cov.ops)} operations{rare}; operation pairs {cov.pairs_seen} of {cov.pairs_possible}"


def run_text(doc: FuzzDocument) -> str:
    """`3000 generated programs in 60 s (50/s), seed 3`"""
    seed = "?" if doc.seed is None else doc.seed
    return f"{doc.programs} generated programs in {doc.seconds:g} s ({doc.programs_per_second:g}/s), seed {seed}"


def facts(doc: FuzzDocument) -> list[tuple[str, str]]:
    """The summary's rows: what each says, in bounded plain text."""
    return [
        ("programs", run_text(doc)),
        ("burn", text(doc.burn or "installed probe")),
        ("new divergences", counts_text(doc.divergences.new)),
        ("known differences met", counts_text(doc.divergences.known)),
        ("filtered", counts_text(doc.filtered)),
        ("coverage", coverage_text(doc)),
    ]


def found(doc: FuzzDocument) -> tuple[list[FoundEntry], int]:
    """The divergences written, at most `ENTRY_LIMIT` of them, and how many more there are."""
    return doc.found[:ENTRY_LIMIT], max(0, len(doc.found) - ENTRY_LIMIT)


__all__ = ["DEFAULT", "FuzzSection", "counts_text", "coverage_text", "facts", "found", "read", "text"]
