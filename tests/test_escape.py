"""One escaping function per destination (runner/escape.py): the terminal and
Markdown. Properties over any text, checked from the outside: a CommonMark
parser for Markdown, the characters a terminal acts on for the terminal."""

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from runner import escape

# Any text, with a good share of what attacks use: escape sequences, line
# breaks, Markdown punctuation, bidirectional overrides, lone surrogates.
HOSTILE = st.text(
    st.one_of(
        st.characters(codec=None),
        st.sampled_from(list("\x1b\x07\x9b\n\r\t\\`*_[]()<>|~&#!-+=.:0123456789 \u202e\u2066\u2028\ud800")),
    ),
    max_size=60,
)
# What a terminal acts on: controls (C0, DEL, C1), format characters that
# reorder a line, separators, surrogates.
ACTIVE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


@settings(max_examples=500, deadline=None)
@given(HOSTILE)
def test_terminal_text_holds_nothing_a_terminal_acts_on(text):
    shown = escape.terminal(text)
    assert not ACTIVE.search(shown)
    assert escape.terminal(shown) == shown  # idempotent: escaping twice changes nothing
    lines = escape.terminal(text, lines=True)
    assert not ACTIVE.search(lines.replace("\n", "").replace("\t", ""))
    assert lines.count("\n") == text.count("\n")


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec=None), max_size=60))
def test_text_a_terminal_does_not_act_on_is_unchanged(text):
    text = ACTIVE.sub("", text)
    assert escape.terminal(text) == text


@pytest.mark.parametrize(
    "text, shown",
    [
        ("\x1b]0;pwned\x07\x1b[2J", "\\x1b]0;pwned\\x07\\x1b[2J"),
        ("a\nFAIL", "a\\nFAIL"),
        ("\u202eevil", "\\u202eevil"),
        ("\ud800", "\\ud800"),
        ("\x9b2J", "\\x9b2J"),
        ("ok café 😀", "ok café 😀"),
    ],
)
def test_terminal_examples(text, shown):
    assert escape.terminal(text) == shown


MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _inline(source):
    """The inline tokens of a one-paragraph document, or None if it is not one paragraph."""
    tokens = MD.parse(source)
    if [t.type for t in tokens] != ["paragraph_open", "inline", "paragraph_close"]:
        return None
    return tokens[1].children


@settings(max_examples=800, deadline=None)
@given(HOSTILE)
def test_markdown_text_renders_as_itself_and_nothing_else(text):
    children = _inline("x " + escape.markdown(text) + " x")
    assert children is not None
    assert {c.type for c in children} <= {"text"}, [c.type for c in children]
    rendered = "".join(c.content for c in children)
    # CommonMark folds a run of spaces only at a line's ends; what it keeps is the text.
    assert rendered == "x " + escape.terminal(text) + " x"


@settings(max_examples=300, deadline=None)
@given(HOSTILE)
def test_markdown_text_in_a_table_cell_stays_in_its_cell(text):
    tokens = MD.parse(f"| a | b |\n|---|---|\n| {escape.markdown(text)} | end |\n")
    cells = [t for t in tokens if t.type == "inline"]
    assert len(cells) == 4  # two headers, two cells: nothing added or merged
    assert cells[-1].content == "end"
    children = cells[2].children or []
    assert {c.type for c in children} <= {"text"}
    # A cell's text is trimmed of white space at its ends: the rest is the text.
    assert "".join(c.content for c in children).strip() == escape.terminal(text).strip()


@settings(max_examples=800, deadline=None)
@given(HOSTILE.filter(lambda t: t.strip() == t and t))
def test_markdown_text_at_the_start_of_a_line_renders_as_itself(text):
    children = _inline(escape.markdown(text))
    assert children is not None, escape.markdown(text)
    assert {c.type for c in children} <= {"text"}
    assert "".join(c.content for c in children) == escape.terminal(text)


@pytest.mark.parametrize("text", ["# heading", "- item", "+ item", "> quote", "1. item", "2) item", "===", "---"])
def test_markdown_text_at_the_start_of_a_line_opens_no_block(text):
    assert _inline(escape.markdown(text)) is not None
    assert "".join(c.content for c in _inline(escape.markdown(text))) == text


def test_markdown_keeps_underscores_inside_words_readable():
    assert escape.markdown("p10_ema burn/detach") == "p10_ema burn/detach"
    assert escape.markdown("_x_") == "\\_x\\_"


def test_the_injection_of_issue_21_item_13_stays_text():
    path = "/tmp/x\n# Owned\n![img](http://x/y.png)\n[click](javascript:alert(1))"
    html = MD.render(f"## Upgrade check: burn 0.22.1 → {escape.markdown('path:' + path)}\n")
    assert html.count("<h") == 1 and "<img" not in html and "<a " not in html


def test_quote_and_bounded_say_how_long_a_value_was():
    assert escape.quote("9" * 5000) == "'" + "9" * 76 + f"... ({5002} characters)"
    message = "argument --seed: invalid int value: '" + "9" * 5000 + "'"
    assert len(escape.bounded(message)) < 160 and "5002 characters" in escape.bounded(message)
    assert escape.bounded("short 'values' stay") == "short 'values' stay"


def test_unicode_categories_the_terminal_pattern_covers():
    # Every control and every bidirectional format character is shown, whatever the Unicode version.
    for code in range(0x10000):
        ch = chr(code)
        if unicodedata.category(ch) == "Cc" or unicodedata.bidirectional(ch) in (
            "LRE",
            "RLE",
            "LRO",
            "RLO",
            "PDF",
            "LRI",
            "RLI",
            "FSI",
            "PDI",
        ):
            assert escape.terminal(ch) != ch, hex(code)
