"""The one operation table: consistent in itself, and the same ops as the contract's table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runner.contract.ops import (
    ARG_NAME,
    OMITTED,
    OPS,
    REQUIRED,
    attrs_table,
    markdown_table,
    supported_ops,
)

DOC = Path(__file__).resolve().parent.parent / "docs" / "program-ir.md"


def doc_section(title_start: str) -> str:
    text = DOC.read_text()
    start = text.index(title_start)
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def table_rows(text: str, header: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(header)
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_contract_table_lists_the_same_ops():
    rows = table_rows(doc_section("## 3. Operations"), "| op | source | torch | burn 0.22.1 |")[2:]
    names = [n for row in rows for n in re.findall(r"`([a-z_0-9]+)`", row.split("|")[1])]
    assert sorted(names) == sorted(OPS)
    assert len(names) == len(set(names))


def test_contract_table_is_the_rendered_table():
    doc = "\n".join(table_rows(doc_section("## 3. Operations"), "| op | source | torch | burn 0.22.1 |")) + "\n"
    assert doc == markdown_table(), "docs/program-ir.md section 3: paste `python -m runner.contract.ops`"


def test_contract_attrs_table_is_the_rendered_table():
    doc = "\n".join(table_rows(doc_section("## 3. Operations"), "| op | attr | type | default | meaning |")) + "\n"
    assert doc == attrs_table()


def test_detailed_table_has_a_row_per_contract_row():
    detailed = markdown_table(detailed=True).splitlines()
    assert len(detailed) == len(markdown_table().splitlines())
    assert "`div`: any, nonzero" in "\n".join(detailed)


@pytest.mark.parametrize("name", list(OPS))
def test_op_entry_is_consistent(name):
    spec = OPS[name]
    assert spec.name == name
    assert spec.source and spec.torch and spec.burn and spec.summary
    assert not spec.domain or len(spec.domain) == spec.args.count("tensor")
    assert len(set(spec.attr_names)) == len(spec.attr_names)
    for a in spec.attrs:
        if a.default not in (REQUIRED, OMITTED, ARG_NAME):
            assert a.check(a.default) == a.default  # type: ignore[arg-type]
    if spec.result == "block":
        assert spec.category == "block" and not spec.args
    if spec.differentiable:
        assert spec.result == "tensor"
    hand_written = ("observe", "grad", "backward", "train", "eval", "soft_update")
    if spec.supports("torch") and spec.result != "block" and name not in hand_written:
        spelled = (
            spec.torch_code is not None
            or spec.torch_call is not None
            or spec.module is not None
            or spec.torch_signature is not None  # an optimizer or a scheduler: its class
        )
        assert spelled, (
            f"{name}: the renderer needs a torch spelling (torch_code, torch_call, torch_signature, a module)"
        )
    if spec.family is not None:
        assert spec.category in ("layer", "tensor", "loss", "training"), name
    if spec.torch_code is not None:
        fields = {f"a{i}": f"A{i}" for i in range(len(spec.args))}
        fields.update({a.name: 1 for a in spec.attrs})
        spec.torch_code.format(**fields)
    assert spec.signature().startswith(f"{name}(")


def test_framework_support():
    assert "without_autodiff" not in supported_ops("torch")
    assert "no_grad" not in supported_ops("burn")
    assert set(supported_ops("torch")) | set(supported_ops("burn")) == set(OPS)


def test_attribute_checks_say_what_is_valid():
    lr = OPS["sgd"].attr("lr")
    assert lr is not None
    assert lr.check(1) == 1.0 and isinstance(lr.check(1), float)
    for bad, message in [
        (0.0, "must be > 0"),
        (True, "must be a number"),
        ("x", "must be a number"),
        (float("nan"), "finite"),
    ]:
        with pytest.raises(ValueError, match=message):
            lr.check(bad)
    shape = OPS["reshape"].attr("shape")
    assert shape is not None
    with pytest.raises(ValueError, match="list of integers"):
        shape.check([1.5])
    label = OPS["observe"].attr("label")
    assert label is not None
    with pytest.raises(ValueError, match="1 to 200 characters"):
        label.check("")
