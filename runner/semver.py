"""Just enough semantic versioning for burn releases: parse `MAJOR.MINOR.PATCH[-PRE][+BUILD]`,
order them (a pre-release sorts before its release), and match requirements
such as `">=0.22.0, <0.23.0"` (comma-separated clauses, all must hold)."""

from __future__ import annotations

import re
from functools import total_ordering

_VERSION = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)
_CLAUSE = re.compile(r"\s*(>=|<=|>|<|=)?\s*(\S+)\s*")


def is_version(text: str) -> bool:
    return _VERSION.fullmatch(text) is not None


@total_ordering
class Version:
    def __init__(self, text: str):
        match = _VERSION.fullmatch(text)
        if not match:
            raise ValueError(f"not a semantic version (MAJOR.MINOR.PATCH[-PRE]): {text!r}")
        self.text = text
        self.release = tuple(int(match.group(i)) for i in (1, 2, 3))
        self.pre = tuple(match.group(4).split(".")) if match.group(4) else ()

    def _key(self):
        # A release sorts after all of its pre-releases; numeric identifiers sort
        # numerically and before alphanumeric ones.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return self.release, (1,) if not self.pre else (0, pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._key() == other._key()

    def __lt__(self, other: "Version") -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Version({self.text!r})"


def parse_requirement(text: str) -> list[tuple[str, Version]]:
    clauses = []
    for part in text.split(","):
        match = _CLAUSE.fullmatch(part)
        if not match or not is_version(match.group(2)):
            raise ValueError(
                f"not a version requirement: {text!r}; write clauses like \">=0.22.0, <0.23.0\" "
                "(operators >=, <=, >, <, =; full MAJOR.MINOR.PATCH versions)"
            )
        clauses.append((match.group(1) or "=", Version(match.group(2))))
    return clauses


def matches(version: str, requirement: str) -> bool:
    v = Version(version)
    ops = {">=": v.__ge__, "<=": v.__le__, ">": v.__gt__, "<": v.__lt__, "=": v.__eq__}
    return all(ops[op](bound) for op, bound in parse_requirement(requirement))
