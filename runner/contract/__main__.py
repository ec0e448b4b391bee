"""`python3 -m runner.contract`: write every file generated from the contract.

`--check` writes nothing and exits 1 naming each file that is not what it
would write (what `tests/test_contract.py` runs).
"""

from __future__ import annotations

import sys

from .generated import check, write


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        stale = check()
        for path in stale:
            print(f"stale: {path} (run `python3 -m runner.contract`)", file=sys.stderr)
        return 1 if stale else 0
    if argv:
        print("usage: python3 -m runner.contract [--check]", file=sys.stderr)
        return 2
    for path in write():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
