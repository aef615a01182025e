"""The expression cases the TypeScript runtime replays are what the Python runtime answers now:
the committed file equals what tests/ts/make_expr_cases.py writes."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _maker(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_expression_cases_are_up_to_date() -> None:
    maker = _maker("make_expr_cases")
    written = maker.OUT.read_text(encoding="utf-8")
    assert written == maker.build(), "run: .venv/bin/python tests/ts/make_expr_cases.py"


def test_the_cases_cover_every_op_and_function_with_results_and_faults() -> None:
    maker = _maker("make_expr_cases")
    cases = json.loads(maker.OUT.read_text(encoding="utf-8"))
    ops = {c["expr"]["op"] for c in cases}
    calls = {c["expr"]["value"] for c in cases if c["expr"]["op"] == "call"}
    assert {"+", "-", "*", "/", "%", "==", "<", "in", "not in", "index", "attr", "cond"} <= ops
    assert {"any", "all", "count", "sum", "min", "max", "list", "map", "neg", "not"} <= ops
    assert {"len", "round", "str", "merge", "keys", "values", "trim", "coalesce"} <= calls
    assert {"active", "event_name"} <= calls
    kinds = {k for c in cases for k in ("result", "fault", "limit") if k in c}
    assert kinds == {"result", "fault", "limit"}


def test_the_action_cases_are_up_to_date() -> None:
    maker = _maker("make_action_cases")
    written = maker.OUT.read_text(encoding="utf-8")
    assert written == maker.build(), "run: .venv/bin/python tests/ts/make_action_cases.py"


def test_the_template_cases_are_up_to_date() -> None:
    maker = _maker("make_template_cases")
    written = maker.OUT.read_text(encoding="utf-8")
    assert written == maker.build(), "run: .venv/bin/python tests/ts/make_template_cases.py"


def test_the_validation_cases_are_up_to_date() -> None:
    maker = _maker("make_validate_cases")
    written = maker.OUT.read_text(encoding="utf-8")
    assert written == maker.build(), "run: .venv/bin/python tests/ts/make_validate_cases.py"


def test_the_message_cases_are_up_to_date() -> None:
    maker = _maker("make_message_cases")
    written = maker.OUT.read_text(encoding="utf-8")
    assert written == maker.build(), "run: .venv/bin/python tests/ts/make_message_cases.py"


def test_the_default_messages_of_the_typescript_runtime_are_up_to_date() -> None:
    maker = _maker("make_default_messages")
    written = maker.OUT.read_text(encoding="utf-8")
    assert written == maker.build(), "run: .venv/bin/python tests/ts/make_default_messages.py"
