"""Semantic versions of burn releases, with the `semver` library (SemVer 2.0:
`0.23.0-pre.1` is a pre-release of 0.23.0 and sorts before it; PEP 440 tools
such as `packaging` read it as a release candidate, which crates are not).

A requirement is comma-separated clauses that must all hold, e.g.
`">=0.22.0, <0.23.0"`, with operators >=, <=, >, <, = and full versions.
"""

from __future__ import annotations

import re

import semver

from .escape import quote

_CLAUSE = re.compile(r"\s*(>=|<=|>|<|=|==)?\s*(\S+)\s*")
REQUIREMENT_HINT = 'write clauses like ">=0.22.0, <0.23.0" (operators >=, <=, >, <, =; full MAJOR.MINOR.PATCH versions)'


def parse(text: str) -> semver.Version:
    """A version, or ValueError naming what is wrong."""
    try:
        return semver.Version.parse(text)
    except (ValueError, TypeError):
        raise ValueError(f"not a semantic version (MAJOR.MINOR.PATCH[-PRE]): {quote(text)}") from None


def is_version(text: str) -> bool:
    try:
        parse(text)
    except ValueError:
        return False
    return True


def parse_requirement(text: str) -> list[tuple[str, semver.Version]]:
    clauses = []
    for part in text.split(","):
        match = _CLAUSE.fullmatch(part)
        if not match or not is_version(match.group(2)):
            raise ValueError(f"not a version requirement: {quote(text)}; {REQUIREMENT_HINT}")
        op = match.group(1) or "="
        clauses.append(("=" if op == "==" else op, parse(match.group(2))))
    return clauses


def matches(version: str, requirement: str) -> bool:
    v = parse(version)
    checks = {">=": v.__ge__, "<=": v.__le__, ">": v.__gt__, "<": v.__lt__, "=": v.__eq__}
    return all(checks[op](bound) for op, bound in parse_requirement(requirement))
