"""Sample results for the report tests.

`data/p10_results_1.json` and `data/p10_results_2.json` are two real, unedited
results documents written by `python3 -m runner check --json` on the same
x86_64 machine (2 cores, shared), one after the other: in the first, torch's
RSS grew by 1.96 MiB per 1000 steps, so three expectations do not hold; in the
second all 45 hold.

`data/p10_results_v2_400steps.json` is a real, unedited schema-2 document
(`check p10_ema --steps 400 --json`, after the hardening of issue 11: memory
limits, `partial`), the base the renderers' property tests mutate besides
the two above.

The helpers below derive TEST fixtures from them (a second machine, a later
night, an edited outcome); each says what it changes.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path

from runner import cli

DATA = Path(__file__).resolve().parent / "data"
SAMPLE_1 = DATA / "p10_results_1.json"
SAMPLE_2 = DATA / "p10_results_2.json"
SAMPLE_V2 = DATA / "p10_results_v2_400steps.json"


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def save(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))
    return path


def shifted(doc: dict, days: float) -> dict:
    """TEST fixture: the same results, as if the run had started `days` later."""
    out = copy.deepcopy(doc)
    for key in ("started", "finished"):
        when = dt.datetime.fromisoformat(out["provenance"][key]) + dt.timedelta(days=days)
        out["provenance"][key] = when.isoformat(timespec="seconds")
    return out


def on_aarch64(doc: dict) -> dict:
    """TEST fixture: the same results with only the provenance rewritten to
    another machine (an aarch64 host). Not a real aarch64 run."""
    out = copy.deepcopy(doc)
    out["provenance"].update(cpu="Neoverse-N1 (test fixture)", machine="aarch64", cores=4, system="Linux 6.1.0-test")
    return out


def only_passing(doc: dict) -> dict:
    """TEST fixture: the document without its failing expectations."""
    out = copy.deepcopy(doc)
    out["expectations"] = [e for e in out["expectations"] if e["passed"]]
    return out


def report(*args: str) -> int:
    return cli.main(["report", *map(str, args)])


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
