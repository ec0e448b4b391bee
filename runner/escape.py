"""Text that came from input (file names, case names, labels, panic and error
messages, argument values), made safe for where it goes: one function per
destination.

- `terminal`: stdout and stderr. Control characters (escape sequences
  included), C1 controls, bidirectional overrides and lone surrogates are
  shown visibly (`\\x1b`, `\\n`, `\\u202e`), so that a case file's name cannot
  set the terminal's title, clear the screen, move the cursor over a FAIL line
  or forge a line of its own.
- `markdown`: one line of Markdown text (a heading, a list item, a table cell):
  nothing in it becomes markup (no heading, link, image, HTML, code span,
  emphasis or table cell border) and line breaks are shown, not kept.
- `quote`: a value quoted in a message, shortened to `QUOTE_LIMIT` characters
  with its length said (a 5,000-digit argument is not echoed whole).

HTML has its own (`html.escape`, in the report's renderers); TOML is written
by a TOML writer (`tomli_w`, `runner/upgrade/build.py`).

Both escaping functions are idempotent on their own output for the terminal
(`terminal(terminal(x)) == terminal(x)`): what they write holds no character
they would change.
"""

from __future__ import annotations

import re
from typing import Any

# Messages quote at most this many characters of a bad value.
QUOTE_LIMIT = 80

# Besides the C0 controls (ESC among them): DEL, the C1 controls (0x9b is a
# one-byte CSI on some terminals), the bidirectional marks, embeddings,
# overrides and isolates (they reorder what follows on the line), the line and
# paragraph separators, the byte-order mark, and lone surrogates (not text:
# printing one raises).
_OTHER = r"\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff"
_FIELD = re.compile(rf"[\x00-\x1f{_OTHER}]")
_LINES = re.compile(rf"[\x00-\x08\x0b-\x1f{_OTHER}]")  # keeps tabs and line feeds
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: object, lines: bool = False) -> str:
    """`text` for a terminal: every control character shown as `\\x1b`, `\\n`, ...

    With `lines`, line breaks and tabs are kept (a message of several lines
    written as one); without it (a name, a label, a message inside a line of
    its own) they are shown too, so the text stays on its line."""
    return (_LINES if lines else _FIELD).sub(_visible, str(text))


# Characters that open Markdown markup anywhere in a line: backslash, code
# spans, emphasis, links and images (`[`, `]`: an escaped `[` also disarms
# `![`), raw HTML and autolinks (`<`, `>`), table cells (`|`), strikethrough
# (`~`) and entities (`&`). An underscore between two letters or digits
# (`p10_ema`) cannot open or close emphasis and is left as it is.
_INLINE = re.compile(r"[\\`*\[\]<>|~&]|(?<![^\W_])_|_(?![^\W_])")
# What opens a block at the start of a line: a heading (`# `), a list item
# (`- `, `+ `, `1. `, `1) `), a thematic break or setext underline (`---`,
# `===`); `>` (a quote) is escaped everywhere.
_LINE_START = re.compile(r"^(\s*)(?:([#+=-])(?=[\s#+=-]|$)|(\d{1,9})([.)])(?=\s|$))")


def markdown(text: object) -> str:
    """`text` as literal Markdown within one line (a heading, a list item, a
    table cell): its Markdown punctuation backslash-escaped (it renders as
    itself), a block marker at its start disarmed, and control characters,
    line breaks included, shown as `\\x1b`, `\\n`."""
    escaped = _INLINE.sub(lambda m: "\\" + m.group(), terminal(text))
    return _LINE_START.sub(_disarmed, escaped)


def _disarmed(match: re.Match[str]) -> str:
    space, marker, number, delimiter = match.groups()
    # `# x` -> `\# x`; `1. x` -> `1\. x`
    return space + ("\\" + marker if marker else number + "\\" + delimiter)


def quote(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """`repr(value)`, shortened to `limit` characters with the length said."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[: limit - 3]}... ({len(text)} characters)"


# In a message: a quoted value ('...' or "...", as repr writes them), or a run
# of characters without a space.
_QUOTED_OR_WORD = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\S+""")


def bounded(message: str, limit: int = QUOTE_LIMIT) -> str:
    """A message whose every quoted value and every word is at most about
    `limit` characters (longer ones cut, with their length said); for messages
    made by code that quotes whole values (argparse's)."""

    def cut(match: re.Match[str]) -> str:
        token = match.group()
        if len(token) <= limit:
            return token
        return f"{token[: limit - 3]}... ({len(token)} characters)"

    return _QUOTED_OR_WORD.sub(cut, message)
