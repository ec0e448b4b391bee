"""The results document: make one (provenance, summary) and read one back
(`check --json` files, `report` bundles, history entries), migrating older
schema versions. Everything read is validated by the typed model, so what the
report and the comparisons read is what the schema promised.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import noise, outputs
from .cost import cpu_peak
from .errors import BadInput, Interrupted, RunnerError
from .escape import quote
from .inputs import MAX_RESULTS_BYTES, parse_json, read_text
from .model import migrate
from .model.base import describe_errors
from .model.case import Case, ProgramCase
from .model.results import (
    BUNDLE_KEY,
    BUNDLE_VERSION,
    SCHEMA_VERSION,
    Bundle,
    CaseInfo,
    PairInfo,
    ProgramInfo,
    Provenance,
    ResultsDocument,
    RunRecord,
    Skipped,
    Summary,
    Verdict,
)
from .paths import PROJECT_ROOT
from .procinfo import cpu_model
from .signals import say

SUPPORTED_VERSIONS = (1, SCHEMA_VERSION)


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def _probe_info() -> dict[str, str]:
    """The installed probe's build (`_probe.build_info()`: burn, rustc, profile); empty without a probe."""
    if importlib.util.find_spec("runner._probe") is None:
        return {}
    from . import _probe

    return {key: str(value) for key, value in _probe.build_info().items()}


def _distribution_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class MachineState:
    """The machine's load and CPU frequency at one moment (`runner.noise`)."""

    load: float | None
    cpu_mhz: float | None


def machine_state() -> MachineState:
    return MachineState(noise.load_average(), noise.cpu_mhz())


@dataclass(frozen=True)
class Measurement:
    """How the runs were measured: the machine at the start, the noise controls
    of the timed runs and how often each ran."""

    start: MachineState
    controls: str
    repeat: int = 1


def provenance(
    started: dt.datetime,
    finished: dt.datetime,
    runs: list[RunRecord] | None = None,
    measurement: Measurement | None = None,
) -> Provenance:
    probe = _probe_info()
    peak = cpu_peak()
    end = machine_state()
    ran = sorted({r.versions.get("burn") for r in runs or []} - {None})  # type: ignore[type-var]
    return Provenance(
        # The burn version the runs report; the installed probe's when none ran.
        burn=", ".join(v for v in ran if v) if ran else probe.get("burn"),
        probe_profile=probe.get("profile"),
        torch=_distribution_version("torch"),
        rustc=probe.get("rustc"),
        python=platform.python_version(),
        cpu=cpu_model(),
        machine=platform.machine(),
        system=f"{platform.system()} {platform.release()}",
        cores=os.cpu_count(),
        git_commit=_git_commit(),
        started=started.replace(microsecond=0),
        finished=finished.replace(microsecond=0),
        load_start=measurement.start.load if measurement else None,
        load_end=end.load,
        cpu_mhz=(measurement.start.cpu_mhz if measurement else None) or end.cpu_mhz,
        noise_controls=measurement.controls if measurement else None,
        repeat=measurement.repeat if measurement else None,
        peak_gflops=round(peak.gflops, 1) if peak else None,
        peak_basis=peak.basis() if peak else None,
    )


def case_info(case: Case) -> CaseInfo:
    pairs = [PairInfo(a=p.a, b=p.b, same=list(p.same), differ=list(p.differ), reason=p.reason) for p in case.pairs]
    programs: dict[str, ProgramInfo] = {}
    if isinstance(case, ProgramCase):
        for variant, source in case.program.sources().items():
            recipe = case.programs.get(variant)
            settings = recipe.settings.model_dump() if recipe is not None else {}
            programs[variant] = ProgramInfo(source=source.strip("\n"), **settings)
    return CaseInfo(
        name=case.name,
        kind=case.kind,
        description=case.description,
        about=case.about,
        pairs=pairs,
        programs=programs,
        tolerance=case.program.tolerance if isinstance(case, ProgramCase) else None,
        weights_tolerance=case.program.weights_tolerance if isinstance(case, ProgramCase) else None,
        grads_tolerance=case.program.grads_tolerance if isinstance(case, ProgramCase) else None,
    )


def document(
    runs: list[RunRecord],
    expectations: list[Verdict],
    started: dt.datetime,
    finished: dt.datetime,
    not_applicable: list[Skipped] | None = None,
    cases: list[Case] | None = None,
    partial_reason: str | None = None,
    measurement: Measurement | None = None,
) -> ResultsDocument:
    """The results document; with `partial_reason`, one marked partial (a check stopped early)."""
    return ResultsDocument(
        schema_version=SCHEMA_VERSION,
        provenance=provenance(started, finished, runs, measurement),
        summary=Summary.of(runs, expectations),
        cases=[case_info(c) for c in cases or []],
        runs=runs,
        expectations=expectations,
        not_applicable=not_applicable or [],
        partial=partial_reason is not None,
        partial_reason=partial_reason,
    )


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def dump(doc: ResultsDocument | Bundle) -> str:
    return doc.model_dump_json(indent=1) + "\n"


_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}


def _invalid(source: str, err: ValidationError, root: type[ResultsDocument] | type[Bundle]) -> BadInput:
    lines = describe_errors(err, root)
    return BadInput(f"{source}: " + f"\n{source}: ".join(lines))


def validate(data: Any, source: str) -> ResultsDocument:
    """A parsed results document of any supported version, as the current model."""
    if not isinstance(data, dict):
        raise BadInput(
            f"{source}: top level: expected a results document (an object), "
            f"got {_JSON_TYPES.get(type(data), type(data).__name__)}"
        )
    if "schema_version" not in data:
        keys = ", ".join(sorted(data)[:8]) or "none"
        raise BadInput(
            f"{source}: schema_version: missing: not a results document of this runner (top-level keys: {keys})"
        )
    version = data["schema_version"]
    if isinstance(version, bool) or version not in SUPPORTED_VERSIONS:
        raise BadInput(
            f"{source}: schema_version: {quote(version, 40)} is not supported; this runner "
            f"reads {', '.join(map(str, SUPPORTED_VERSIONS))}"
        )
    try:
        current = migrate.to_current(data)
    except migrate.MigrationError as err:
        raise BadInput(f"{source}: schema_version {version}: {err}") from None
    try:
        return ResultsDocument.model_validate_json(json.dumps(current, allow_nan=False))
    except ValidationError as err:
        raise _invalid(source, err, ResultsDocument) from None
    except ValueError as err:  # a NaN or infinity that slipped into a migrated document
        raise BadInput(f"{source}: {err}") from None


def parse_results(text: str, source: str) -> list[ResultsDocument]:
    """The results documents in one file's text (a bundle holds several)."""
    data = parse_json(text, source, "results file")
    if isinstance(data, dict) and BUNDLE_KEY in data:
        if data[BUNDLE_KEY] not in (1, BUNDLE_VERSION) or isinstance(data[BUNDLE_KEY], bool):
            raise BadInput(
                f"{source}: {BUNDLE_KEY}: {quote(data[BUNDLE_KEY], 40)} is not supported; "
                f"this runner reads 1, {BUNDLE_VERSION}"
            )
        docs = data.get("results")
        if not isinstance(docs, list) or not docs:
            raise BadInput(f"{source}: results: expected a non-empty array of results documents")
        return [validate(doc, f"{source}: results[{i}]") for i, doc in enumerate(docs)]
    return [validate(data, source)]


def load_results(path: Path) -> list[ResultsDocument]:
    """The results documents in one file."""
    return parse_results(read_text(path, "results file", MAX_RESULTS_BYTES), str(path))


def bundle(docs: list[ResultsDocument]) -> ResultsDocument | Bundle:
    """What `results.json` holds: the document itself, or a bundle of several."""
    if len(docs) == 1:
        return docs[0]
    return Bundle(merged_results_schema_version=BUNDLE_VERSION, results=docs)


def keep_partial(stop: Interrupted, name: str, target: Path | None = None) -> list[Path]:
    """Write the completed runs a signal left (documents marked partial) to
    `target`, or else to kept files (`outputs.keep`); say where on stderr.
    Never raises: the command is already on its way out."""
    docs = [d for d in stop.partial if isinstance(d, ResultsDocument) and d.runs]
    if not docs:
        say(f"interrupted by {stop.name} before any run completed: nothing to keep")
        return []
    kept: list[Path] = []
    for index, doc in enumerate(docs):
        text = dump(doc)
        where: Path | None = None
        try:
            if target is not None and index == 0 and len(docs) == 1:
                try:
                    outputs.write_or_keep([(target, text)], str(target))
                    where = target
                except RunnerError as err:
                    say(f"error: {err}")
            if where is None:
                where = outputs.keep(name, text)
        except (RunnerError, OSError) as err:
            say(f"interrupted by {stop.name}: the completed runs could not be kept: {err}")
            continue
        kept.append(where)
        say(f"interrupted by {stop.name}: {len(doc.runs)} completed runs kept in {where} (marked partial)")
    return kept
