"""Property tests (hypothesis): parse/unparse round trips, the parser raises only BadInput, and generated
programs always run to an outcome under the torch interpreter."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from program_strategies import SYNTAXY, programs

from runner.contract.ops import OPS
from runner.errors import BadInput
from runner.model.results import InterpreterResult, from_data
from runner.program import torch_interp
from runner.program.data import materialize
from runner.program.render_torch import render
from runner.program.syntax import parse, unparse


@settings(max_examples=150, deadline=None)
@given(programs())
def test_parse_unparse_round_trip(source):
    p = parse(source, where="generated")
    again = parse(unparse(p), where="unparsed")
    assert again == p


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), SYNTAXY))
def test_parser_raises_only_bad_input(text):
    try:
        p = parse(text, where="fuzz")
    except BadInput as e:
        assert str(e).startswith("fuzz:")
    else:
        assert parse(unparse(p), where="again") == p


@settings(max_examples=100, deadline=None)
@given(programs(), st.integers(0, 400), st.text(max_size=3))
def test_mutated_programs_raise_only_bad_input(source, at, insert):
    text = source[:at] + insert + source[at + len(insert) :]
    try:
        p = parse(text, where="fuzz")
    except BadInput:
        return
    assert parse(unparse(p), where="again") == p


@settings(max_examples=40, deadline=None)
@given(programs(), st.integers(0, 2**32))
def test_generated_programs_run_to_an_outcome(source, seed):
    prog = materialize(parse(source, where="generated"), seed)
    result = torch_interp.run(prog)
    from_data(InterpreterResult, result)
    assert result["outcome"] in ("ok", "error")
    if result["outcome"] == "error":
        assert result["failure"]["type"] and result["failure"]["op"] in OPS
    compile(render(prog), "rendered", "exec")
