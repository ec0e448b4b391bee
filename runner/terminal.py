"""What `check` prints: progress on stderr while it runs (one seed-style line
per checkpoint), then a table of runs and a verdict per expectation on stdout."""

from __future__ import annotations

import sys
from typing import TextIO

from .cases import Case


def _fmt(value, spec: str = ".2f", none: str = "-") -> str:
    return none if value is None else format(value, spec)


def checkpoint_line(framework: str, mode: str, c: dict) -> str:
    """`burn detach step 50: 1.03 ms/step rss + 7.9 MiB tracked=true (is_require_grad=false)`"""
    delta = c.get("rss_delta_mib")
    rss = "rss n/a" if delta is None else f"rss {'-' if delta < 0 else '+'} {abs(delta):.1f} MiB"
    flags = " ".join(f"{k}={_flag(v)}" for k, v in (c.get("flags") or {}).items())
    return (f"{framework} {mode} step {c['step']}: {c['ms_per_step']:.2f} ms/step {rss} "
            f"tracked={_flag(c['tracked'])} ({flags})")


def _flag(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "None" if value is None else str(value)


def outcome_text(record: dict) -> str:
    outcome = record["outcome"]
    if outcome == "panic" and record.get("panic"):
        p = record["panic"]
        return f"panic at step {p['step']} ({p.get('phase', '?')})"
    if outcome == "error" and record.get("error"):
        return f"error {record['error']['type']}"
    if outcome == "crash" and record.get("crash"):
        c = record["crash"]
        return "crash " + (c["signal"] or f"exit {c['exit_code']}")
    if outcome == "timeout":
        return f"timeout after {record.get('timeout_s', 0):g} s"
    return outcome


class ConsoleReporter:
    def __init__(self, stream: TextIO = sys.stderr, verbose: bool = True):
        self.stream, self.verbose = stream, verbose

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def run_started(self, index: int, total: int, case: Case, framework: str, mode: str) -> None:
        self._print(f"[{index}/{total}] {case.name}: {framework} {mode} ({case.steps} steps)")

    def checkpoint(self, case: Case, framework: str, mode: str, checkpoint: dict) -> None:
        if self.verbose:
            self._print("  " + checkpoint_line(framework, mode, checkpoint))

    def run_finished(self, case: Case, record: dict) -> None:
        m = record["metrics"]
        self._print(f"  -> {outcome_text(record)}, {record.get('wall_s', 0):.1f} s wall, "
                    f"slowdown ratio {_fmt(m['slowdown_ratio'])}")
        if record["outcome"] == "panic" and record.get("panic"):
            self._print(f"     {record['panic']['location']}: {record['panic']['message']}")
        if record["outcome"] == "crash" and record.get("crash", {}).get("stderr_tail"):
            tail = record["crash"]["stderr_tail"].strip().splitlines()[-5:]
            self._print("     " + "\n     ".join(tail))


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def summary(doc: dict) -> str:
    out: list[str] = []
    rows = [["case", "framework", "mode", "outcome", "ref ms", "last ms", "ratio",
             "slope ms/1k (95% CI)", "rss MiB/1k", "tracked"]]
    for r in doc["runs"]:
        m = r["metrics"]
        slope = m["slope_ms_per_1000"]
        slope_text = "-" if slope is None else (
            f"{slope['value']:.3f} ({slope['ci95'][0]:.3f}..{slope['ci95'][1]:.3f})")
        rows.append([r["case"], r["framework"], r["mode"], outcome_text(r),
                     _fmt(m["reference_median_ms"], ".3f"), _fmt(m["last_median_ms"], ".3f"),
                     _fmt(m["slowdown_ratio"]), slope_text,
                     _fmt(m["rss_growth_mib_per_1000"], ".2f"), _flag(m["tracked"])])
    out += ["Runs (medians of the reference and last windows; Theil-Sen slopes):", _table(rows), ""]

    out.append("Expectations:")
    for e in doc["expectations"]:
        mark = "PASS" if e["passed"] else "FAIL"
        subject = e.get("pair") or f"{e['framework']}/{e['mode']}"
        out.append(f"  {mark}  {e['case']} {subject} {e['check']}: "
                   f"expected {_show(e['expected'])}, observed {_show(e['observed'])}")
    for skipped in doc.get("not_applicable", []):
        out.append(f"  n/a   {skipped['case']} {skipped['subject']}: limited to burn {skipped['burn_versions']}, "
                   f"ran burn {skipped['burn']}")
    s = doc["summary"]
    out.append("")
    out.append(f"{s['runs']} runs; expectations: {s['passed']} hold, {s['failed']} do not hold")
    return "\n".join(out)


def _show(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool) or value is None:
        return _flag(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 90 else value[:87] + "...")
    return str(value)
