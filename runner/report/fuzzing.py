"""The fuzz section of the report: what the last `burn-torch-diff fuzz` run did
(programs, rate, divergences new and known by class, coverage) and the
divergences it wrote as cases, with their reproducers. Read defensively: a
missing summary means no section; an unreadable one is said on the page and
never changes the exit code."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..inputs import read_json
from .html_base import e, table

DEFAULT = Path("reports") / "fuzz" / "fuzz.json"


@dataclass
class FuzzSummary:
    source: str
    programs: int = 0
    rate: float = 0.0
    seconds: float = 0.0
    seed: int | None = None
    burn: str = ""
    new: dict[str, int] = field(default_factory=dict)
    known: dict[str, int] = field(default_factory=dict)
    filtered: dict[str, int] = field(default_factory=dict)
    coverage_low: list[str] = field(default_factory=list)
    ops: int = 0
    pairs_seen: int = 0
    pairs_possible: int = 0
    found: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _counts(value: Any) -> dict[str, int]:
    return {str(k): _int(v) for k, v in value.items()} if isinstance(value, dict) else {}


def read(path: Path | None) -> FuzzSummary | None:
    if path is None or not Path(path).exists():
        return None
    try:
        doc = read_json(Path(path), "fuzz summary", limit=16 << 20)
    except BadInput as err:
        return FuzzSummary(str(path), error=str(err))
    if not isinstance(doc, dict) or doc.get("fuzz_schema_version") != 1:
        return FuzzSummary(str(path), error=f"{path}: not a fuzz summary (fuzz_schema_version 1)")
    raw_cov = doc.get("coverage")
    cov: dict[str, Any] = raw_cov if isinstance(raw_cov, dict) else {}
    raw_div = doc.get("divergences")
    divergences: dict[str, Any] = raw_div if isinstance(raw_div, dict) else {}
    found = [
        {k: str(f.get(k, "")) for k in ("signature", "class", "case", "torch", "rust")}
        for f in doc.get("found") or []
        if isinstance(f, dict)
    ]
    rate = doc.get("programs_per_second")
    seconds = doc.get("seconds")
    return FuzzSummary(
        source=str(path),
        programs=_int(doc.get("programs")),
        rate=float(rate) if isinstance(rate, (int, float)) and not isinstance(rate, bool) else 0.0,
        seconds=float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else 0.0,
        seed=doc.get("seed") if isinstance(doc.get("seed"), int) else None,
        burn=str(doc.get("burn") or ""),
        new=_counts(divergences.get("new")),
        known=_counts(divergences.get("known")),
        filtered=_counts(doc.get("filtered")),
        coverage_low=[str(x) for x in cov.get("below") or []],
        ops=len(cov.get("ops") or {}),
        pairs_seen=_int(cov.get("pairs_seen")),
        pairs_possible=_int(cov.get("pairs_possible")),
        found=found,
    )


def counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "none"


def markdown(summary: FuzzSummary | None) -> list[str]:
    if summary is None:
        return []
    out = ["", "## Fuzzing", ""]
    if summary.error:
        return [*out, f"The fuzz summary could not be read: {summary.error}"]
    out += [
        f"{summary.programs} generated programs in {summary.seconds:g} s ({summary.rate:g}/s), seed {summary.seed}, "
        f"{summary.burn or 'installed probe'} (`{summary.source}`).",
        "",
        f"- new divergences: {counts_text(summary.new)}",
        f"- known differences met: {counts_text(summary.known)}",
        f"- filtered: {counts_text(summary.filtered)}",
        f"- coverage: {coverage_text(summary)}",
    ]
    for f in summary.found:
        out.append(f"- written: `{f['signature']}`: `{f['case']}` (PyTorch `{f['torch']}`, Rust `{f['rust']}`)")
    return out


def coverage_text(summary: FuzzSummary) -> str:
    rare = f"; rare: {', '.join(summary.coverage_low)}" if summary.coverage_low else ", each at least 10 times"
    return f"{summary.ops} operations{rare}; operation pairs {summary.pairs_seen} of {summary.pairs_possible}"


def html(summary: FuzzSummary | None) -> str:
    if summary is None:
        return ""
    head = '<section id="fuzzing"><h2>Fuzzing</h2>'
    if summary.error:
        return head + f"<p>The fuzz summary could not be read: {e(summary.error)}</p></section>"
    rows = [
        ("programs", f"{summary.programs} in {summary.seconds:g} s ({summary.rate:g}/s), seed {summary.seed}"),
        ("burn", summary.burn or "installed probe"),
        ("new divergences", counts_text(summary.new)),
        ("known differences met", counts_text(summary.known)),
        ("filtered", counts_text(summary.filtered)),
        ("coverage", coverage_text(summary)),
    ]
    facts = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in rows)
    found = [
        [
            f"<code>{e(f[key])}</code>" if key != "class" else e(f[key])
            for key in ("signature", "class", "case", "torch", "rust")
        ]
        for f in summary.found
    ]
    listing = (
        "<h3>Divergences written by this run</h3>"
        + table(["signature", "class", "case", "PyTorch reproducer", "Rust reproducer"], found, "found")
        if summary.found
        else "<p>No new divergence: every divergence met was filtered or is a documented difference.</p>"
    )
    note = f'<p class="note">From <code>{e(summary.source)}</code>.</p>'
    return f'{head}{note}<div class="scroll"><table>{facts}</table></div>{listing}</section>'


__all__ = ["DEFAULT", "FuzzSummary", "coverage_text", "html", "markdown", "read"]
