"""The language side of issue 26: context fields marked `input` / `hidden` (parsed the same by
both parsers, lowered to IR version 3, read by the tools), and `expect effect` /
`expect no effect` in test blocks, with coverage and `flowc paths`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.compiler import compile_source
from flowc.compiler.fastparse import parse_module
from flowc.compiler.parse import parse_source
from flowc.compiler.testing.coverage import coverage_of
from flowc.compiler.testing.paths import generate
from flowc.compiler.testing.runner import run_file
from flowc.runtime.machine import Machine
from flowc.runtime.model import CompiledFlow, IRLoadError
from flowc.runtime.tools import FlowTools, hidden_fields, input_fields, start_schema

ROOT = Path(__file__).parents[2]

LAMP = """\
flow lamp
version 1

context {
  input room: str = ""          # flowc: allow W312
  input hidden owner: str = ""  # flowc: allow W312
  hidden watts: int = 0
  input: int = 0                # flowc: allow W312 (a field may still be called input)
  no: bool = false              # flowc: allow W312
}

effect light(lit: bool, watts: int = 60)

event press
event wait

initial state OFF {
  on press -> ON do watts = 60; emit light(lit: true)
  on wait -> self
}
state ON {
  on press -> OFF do emit light(lit: false, watts: 0)
}
"""


def compiled(text: str, tests: str = "") -> CompiledFlow:
    result = compile_source(text + tests, "lamp.flow")
    assert result.ok and result.flow is not None, [str(d) for d in result.diagnostics]
    return result.flow


def test_both_parsers_read_marks_and_effect_expectations_alike() -> None:
    text = LAMP + (
        'test "t" {\n  send press\n  expect effect light(lit: true)\n  expect effect light\n'
        "  expect no effect\n  expect no effect light\n  expect no\n}\n"
    )
    slow = parse_source(text, fast_path=False)
    assert not slow.diagnostics
    assert parse_module(text) == slow.module
    context = slow.module.decls[2]
    assert [[m.name for m in f.marks] for f in context.fields] == [  # type: ignore[attr-defined]
        ["input"],
        ["input", "hidden"],
        ["hidden"],
        [],
        [],
    ]


def test_marks_reach_the_ir_as_version_3_and_unmarked_flows_stay_as_they_were() -> None:
    flow = compiled(LAMP)
    assert flow.ir_version == 3
    marks = {f.name: (f.input, f.hidden) for f in flow.context}
    assert marks == {
        "room": (True, False),
        "owner": (True, True),
        "watts": (False, True),
        "input": (False, False),
        "no": (False, False),
    }
    loaded = CompiledFlow.from_json(flow.to_json())
    assert loaded == flow
    plain = compiled(LAMP.replace("input ", "").replace("hidden ", ""))
    assert plain.ir_version == 2  # effects: version 2, as before marks existed
    assert all(
        "input" not in f and "hidden" not in f for f in json.loads(plain.to_json())["context"]
    )


def test_a_hand_edited_mark_that_is_not_a_boolean_is_refused() -> None:
    raw = json.loads(compiled(LAMP).to_json())
    raw["context"][0]["input"] = "yes"
    raw.pop("hash")
    with pytest.raises(IRLoadError, match=r"room\.input"):
        Machine(raw)


def test_a_mark_written_twice_is_an_error() -> None:
    result = compile_source(LAMP.replace("input room", "input input room"), "lamp.flow")
    [error] = [d for d in result.diagnostics if d.severity == "error"]
    assert error.code == "E103" and "marked `input` twice" in error.message


def test_tools_read_the_marks_and_old_ir_offers_no_start_input() -> None:
    machine = Machine(compiled(LAMP))
    assert input_fields(machine) == ["room", "owner"]
    assert hidden_fields(machine) == {"owner", "watts"}
    assert list(start_schema(machine)["properties"]) == ["room", "owner"]
    old = Machine.from_file(ROOT / "tests" / "store" / "data" / "v2" / "pr_review.json")
    assert start_schema(old)["properties"] == {}  # written before marks: nothing is input
    names = FlowTools([old]).names()
    assert names and not [n for n in names if n.startswith("done")]


def outcomes(tests: str) -> list[tuple[str, str | None]]:
    result = compile_source(LAMP + tests, "lamp.flow")
    assert result.ok, [str(d) for d in result.diagnostics]
    return [(o.name, o.failure.message if o.failure else None) for o in run_file(result).outcomes]


def test_expect_effect_checks_the_effects_of_the_step_before() -> None:
    assert outcomes(
        'test "on" {\n  send wait\n  expect no effect\n  send press\n'
        "  expect effect light(lit: true, watts: 60)\n  expect effect light\n}\n"
        'test "wrong value" {\n  send press\n  expect effect light(lit: false)\n}\n'
        'test "none wanted" {\n  send press\n  expect no effect light\n}\n'
    ) == [
        ("on", None),
        (
            "wrong value",
            'expected the effect `light` with {"lit": false}, the step emitted '
            'light{"lit": true, "watts": 60}',
        ),
        ("none wanted", 'expected no effect `light`, got light{"lit": true, "watts": 60}'),
    ]


def test_effect_expectations_are_checked_when_compiled() -> None:
    result = compile_source(
        LAMP + 'test "bad" {\n  expect no effect\n  send press\n  expect effect lihgt\n'
        "  expect effect light(litt: true)\n  expect effect light(lit: 3)\n}\n",
        "lamp.flow",
    )
    found = [(d.code, d.message) for d in result.diagnostics if d.severity == "error"]
    assert found == [
        ("E123", "`expect effect` before any step"),
        ("E214", "unknown effect `lihgt`"),
        ("E108", "effect `light` has no field `litt`"),
        ("E201", "`lit` expects `bool`, found `int`"),
    ]


def test_coverage_counts_the_effects_the_tests_emitted() -> None:
    result = compile_source(LAMP + 'test "twice" {\n  send press\n  send press\n}\n', "lamp.flow")
    assert result.flow is not None
    run = run_file(result)
    emitted = sum((o.emitted for o in run.outcomes), start=type(run.outcomes[0].emitted)())
    coverage = coverage_of("lamp.flow", result.flow, set(), emitted)
    assert coverage.to_dict()["effects"] == {"light": 2}


def test_paths_writes_the_effects_its_steps_emit_and_they_pass() -> None:
    flow = compiled(LAMP)
    text = generate(flow).text()
    assert "  send press\n  expect effect light(lit: true, watts: 60)\n" in text
    assert all(message is None for _, message in outcomes(text.split("\n\n", 1)[1]))


def test_the_formatter_keeps_marks_and_effect_expectations_in_their_layout() -> None:
    from flowc.compiler.format import format_source

    text = LAMP + (
        'test "t" {\n  send press\n  expect effect light(lit: true)\n  expect no effect light\n}\n'
    )
    assert format_source(text) == text


GATE = """\
flow gate
version 1

context {
  input ticket: str            # flowc: allow W312
  hidden email: str = ""
  owner: str                   # flowc: allow W312
  hidden note: str = ""        # flowc: allow W312
}

message event_not_accepted "Not now ({{ context.note }})."

event go

initial state A {
  on go if email == "" reject nope "No, {{ context.email }}."
  on go -> B
}

final state B
"""


def lint_codes(text: str) -> list[tuple[str, int, str]]:
    return [(d.code, d.span.line, d.message) for d in compile_source(text, "gate.flow").diagnostics]


def test_lint_says_which_fields_a_model_sees_and_which_no_tool_sets() -> None:
    assert lint_codes(GATE) == [
        (
            "W320",
            6,
            "hidden context field `email` is printed by the refusal `nope` of A, which a model "
            "reads",
        ),
        (
            "W321",
            7,
            "context field `owner` is required at start but not marked `input`: no tool can "
            "start the flow",
        ),
        (
            "W320",
            8,
            "hidden context field `note` is printed by the `event_not_accepted` message, which "
            "a model reads",
        ),
    ]
    unmarked = GATE.replace("input ", "").replace("hidden ", "")
    assert lint_codes(unmarked) == []  # a flow not written for tools is not checked
