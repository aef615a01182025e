"""Lowering builds IR nodes with its own `_new`, which must build exactly what pydantic's
`model_construct` builds: the same fields in the same order, defaults, fields set, and hash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from flowc.compiler import compile_source
from flowc.compiler import lower as lowering

FLOWS = sorted((Path(__file__).resolve().parents[2] / "flows").glob("*.flow"))


def same_nodes(mine: Any, theirs: Any) -> None:
    assert type(mine) is type(theirs)
    if isinstance(mine, BaseModel):
        assert list(mine.__dict__) == list(theirs.__dict__)
        assert mine.model_fields_set == theirs.model_fields_set
        assert mine.__pydantic_extra__ == theirs.__pydantic_extra__
        assert mine.__pydantic_private__ == theirs.__pydantic_private__
        for name in mine.__dict__:
            same_nodes(mine.__dict__[name], theirs.__dict__[name])
    elif isinstance(mine, list | tuple):
        assert len(mine) == len(theirs)
        for a, b in zip(mine, theirs, strict=True):
            same_nodes(a, b)
    else:
        assert mine == theirs


@pytest.mark.parametrize("path", FLOWS, ids=[p.name for p in FLOWS])
def test_lowered_nodes_are_what_model_construct_builds(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = path.read_text(encoding="utf-8")
    mine = compile_source(text, path.name).flow
    monkeypatch.setattr(lowering, "_new", lambda cls, **fields: cls.model_construct(**fields))
    theirs = compile_source(text, path.name).flow
    assert mine is not None and theirs is not None
    same_nodes(mine, theirs)
    assert mine.hash == theirs.hash


def test_a_default_that_is_not_given_is_filled_in_fresh() -> None:
    from flowc.runtime import model as ir

    first = lowering._new(ir.State, name="A", kind="normal", initial=True)
    second = lowering._new(ir.State, name="B", kind="normal", initial=False)
    assert first.meta == {} and first.meta is not second.meta
    assert first.model_fields_set == {"name", "kind", "initial"}
