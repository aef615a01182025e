"""Payload validation (seed 003's feedback shape), JSON Schemas, and expression semantics."""

from __future__ import annotations

from typing import Any

import pytest

from flowc.runtime import Instance, Machine, Rejection

from .conftest import frozen, machine

FLOW = """
flow shapes

enum Color { RED, GREEN }

type Scope {
  target_word_count: int
  notes: list[str] = []
}

type Dream {
  audience: str
  scope: Scope
  color: Color = RED
  rating: int(1..5)? = none
}

context {
  dreams: list[Dream] = []
  total: float = 0
  last: Dream? = none
  x: int = 7
  y: int = 2
  out: str = ""
  nums: list[int] = []
  m: map[str, int] = {}
  f: float = 0
}

event submit(dream: Dream, weight: float = 1)
event calc(a: int, b: int)
event text(s: str)
event tick

initial state S {
  on submit -> self do append(dreams, event.dream); total += event.weight; last = event.dream
  on calc -> self do
    x = event.a % event.b;
    f = event.a / event.b;
    y = round(event.a / event.b);
    nums = [min(event.a, event.b), max(event.a, event.b), abs(0 - event.a)];
    out = str(event.a) + "," + str(f) + "," + str(event.a > event.b)
  on text -> self do
    out = upper(trim(event.s)) + lower(event.s);
    m = merge(m, {event.s: len(event.s)});
    nums = [len(keys(m)), len(values(m))]
  on tick if coalesce(last, {"audience": "?", "scope": {"target_word_count": 0}}).audience == "?"
    -> self do out = "nobody"
  on tick -> self do
    out = coalesce(last, {"audience": "?", "scope": {"target_word_count": 0}}).audience
}
"""


@pytest.fixture
def m() -> Machine:
    return machine(FLOW)


@pytest.fixture
def inst(m: Machine) -> Instance:
    return m.start()


def test_feedback_has_seed_003_shape(inst: Instance) -> None:
    before = frozen(inst)
    r = inst.send(
        "submit",
        {
            "dream": {"audience": 3, "scope": {}, "color": "BLUE", "passages": 1},
            "word_count": 5,
        },
    )
    assert isinstance(r, Rejection) and r.code == "invalid_payload"
    fb = r.feedback
    assert fb is not None and list(fb) == ["result", "issues", "issue_count", "action"]
    assert fb["result"] == "validation_failed"
    assert fb["issues"]["invalid"] == [
        {
            "field": "dream.audience",
            "provided": 3,
            "problem": "expected a string, got an integer",
            "requirement": "a string",
        },
        {
            "field": "dream.color",
            "provided": "BLUE",
            "problem": "'BLUE' is not one of the allowed values",
            "requirement": "one of GREEN, RED",
        },
    ]
    assert fb["issues"]["missing"] == [
        {"field": "dream.scope.target_word_count", "requirement": "an integer"}
    ]
    assert fb["issues"]["unknown"] == ["dream.passages", "word_count"]
    assert fb["issue_count"] == 5
    assert fb["action"] == "Send submit again with corrected data. Unknown fields may be typos."
    assert r.message == "Invalid payload for 'submit': 5 issue(s)."
    assert frozen(inst) == before


def test_ranges_lists_and_none(inst: Instance) -> None:
    r = inst.send(
        "submit",
        {
            "dream": {
                "audience": "a",
                "scope": {"target_word_count": 1, "notes": ["ok", 2]},
                "rating": 9,
            }
        },
    )
    assert isinstance(r, Rejection)
    invalid = {i["field"]: i for i in r.data["issues"]["invalid"]}
    assert invalid["dream.rating"]["problem"] == "9 is above the maximum 5"
    assert invalid["dream.rating"]["requirement"] == "an integer from 1 to 5, or null"
    assert invalid["dream.scope.notes[1]"]["requirement"] == "a string"
    missing = inst.send("submit", None)
    assert isinstance(missing, Rejection)
    assert missing.data["issues"]["missing"] == [
        {"field": "dream", "requirement": "a Dream object (audience, scope, color, rating)"}
    ]
    not_object = inst.send("submit", {"dream": [1]})
    assert isinstance(not_object, Rejection)
    assert not_object.data["issues"]["invalid"][0]["problem"] == "expected an object, got a list"
    boolean = inst.send("calc", {"a": True, "b": 1})
    assert isinstance(boolean, Rejection)  # a bool is not an int


def test_values_are_normalised(inst: Instance) -> None:
    r = inst.send(
        "submit", {"dream": {"audience": "a", "scope": {"target_word_count": 2.0}}, "weight": 2}
    )
    assert r.ok
    [dream] = inst.context["dreams"]
    assert dream == {
        "audience": "a",
        "scope": {"target_word_count": 2, "notes": []},
        "color": "RED",
        "rating": None,
    }
    assert type(dream["scope"]["target_word_count"]) is int
    assert inst.context["total"] == 2.0 and type(inst.context["total"]) is float


def test_event_schemas(m: Machine, inst: Instance) -> None:
    [submit] = [e for e in inst.accepted_events() if e.name == "submit"]
    schema = submit.schema
    assert schema["required"] == ["dream"] and schema["additionalProperties"] is False
    assert schema["properties"]["weight"] == {"type": "number", "default": 1.0}
    dream = schema["properties"]["dream"]
    assert dream["required"] == ["audience", "scope"]
    assert dream["properties"]["color"] == {
        "type": "string",
        "enum": ["GREEN", "RED"],
        "default": "RED",
    }
    assert dream["properties"]["rating"]["anyOf"] == [
        {"type": "integer", "minimum": 1, "maximum": 5},
        {"type": "null"},
    ]
    assert dream["properties"]["scope"]["properties"]["notes"]["items"] == {"type": "string"}
    schema["required"].append("mutated")
    assert m.event_schema("submit")["required"] == ["dream"]  # hosts get copies


def test_arithmetic_and_functions(inst: Instance) -> None:
    assert inst.send("calc", {"a": 7, "b": 2}).ok
    ctx = inst.context
    assert (ctx["x"], ctx["f"], ctx["y"], ctx["nums"]) == (1, 3.5, 4, [2, 7, 7])
    assert ctx["out"] == "7,3.5,true"
    assert inst.send("calc", {"a": -7, "b": 2}).ok
    # Python's modulo (sign of the divisor); rounding half away from zero.
    assert (inst.context["x"], inst.context["y"]) == (1, -4)
    zero = inst.send("calc", {"a": 1, "b": 0})
    assert isinstance(zero, Rejection) and zero.data["detail"] == "division by zero"
    assert inst.send("text", {"s": " Hi "}).ok
    assert inst.context["out"] == "HI hi "
    assert inst.context["m"] == {" Hi ": 4} and inst.context["nums"] == [1, 1]


def test_coalesce_with_a_record_fallback(inst: Instance) -> None:
    inst.send("tick")
    assert inst.context["out"] == "nobody"
    inst.send("submit", {"dream": {"audience": "kids", "scope": {"target_word_count": 1}}})
    inst.send("tick")
    assert inst.context["out"] == "kids"


EXPR_CASES: list[tuple[str, Any]] = [
    ("1 + 2 * 3", 7),
    ("(1 + 2) * 3", 9),
    ("7 / 2", 3.5),
    ("-7 % 3", 2),
    ("round(2.5) + round(-2.5)", 0),
    ("round(0.49)", 0),
    ("round(0.49999999999999994)", 0),
    ("round(4503599627370497.0) - 4503599627370497", 0),
    ("round(-1.5)", -2),
    ('"ab" in "cab"', True),
    ('"k" in {"k": 1}', True),
    ("3 not in [1, 2]", True),
    ("true or 1 / 0 == 1", True),
    ("false and 1 / 0 == 1", False),
    ("max(1, 2.5)", 2.5),
    ('len("héllo")', 5),
    ("[1, 2] + [3]", [1, 2, 3]),
    ("str(1.5) + str(false)", "1.5false"),
]


@pytest.mark.parametrize(("expr", "expected"), EXPR_CASES, ids=[c[0] for c in EXPR_CASES])
def test_expression(expr: str, expected: Any) -> None:
    kind = {bool: "bool", int: "int", float: "float", str: "str", list: "list[int]"}[type(expected)]
    m = machine(
        f"""
flow e
context {{ out: {kind}? = none }}
event go
initial state S {{ on go -> self do out = {expr} }}
"""
    )
    inst = m.start()
    assert inst.send("go").ok
    assert inst.context["out"] == expected


RECORD_LITERALS = """
flow literals

type Point { x: float, y: float, label: str = "" }

context { p: Point? = none, q: Point? = none }

event put(x: float, y: float, label: str)
event put_ints(x: int)

initial state S {
  on put -> self do
    p = {"x": event.x, "y": event.y, "label": event.label};
    q = {"label": event.label, "y": event.y, "x": event.x}
  on put_ints -> self do
    p = {"x": event.x, "y": 2};
    q = {"x": 1.5, "y": 2.5, "label": "lit"}
}
"""


@pytest.mark.parametrize("path", ["generated", "general"])
def test_record_literals_store_normal_records(path: str) -> None:
    # A complete literal in field order is stored as built; any other literal goes through
    # the record's check (defaults filled, ints made floats, fields in the record's order).
    inst = machine(RECORD_LITERALS).start()
    send = inst.send if path == "generated" else lambda e, p: inst._send_slow(e, p, None, None)
    assert send("put", {"x": 1, "y": 2.5, "label": "a"}).ok
    p, q = inst.context["p"], inst.context["q"]
    assert p == q == {"x": 1.0, "y": 2.5, "label": "a"}
    assert list(q) == ["x", "y", "label"] and type(p["x"]) is float
    assert send("put_ints", {"x": 3}).ok
    p, q = inst.context["p"], inst.context["q"]
    assert p == {"x": 3.0, "y": 2.0, "label": ""} and type(p["y"]) is float
    assert q == {"x": 1.5, "y": 2.5, "label": "lit"}


RANGES = """
flow ranged
context { level: int(1..5) = 1, marks: list[int(0..9)] = [] }
event set_level(n: int)
event mark(n: int)
initial state S {
  on set_level -> self do level = event.n
  on mark -> self do append(marks, event.n)
}
"""


@pytest.mark.parametrize("path", ["generated", "general"])
def test_values_computed_into_ranged_fields_are_checked(path: str) -> None:
    # The compiler cannot prove a computed int lies in `1..5`: the step is refused as a fault
    # and the instance keeps its context.
    inst = machine(RANGES).start()
    send = inst.send if path == "generated" else lambda e, p: inst._send_slow(e, p, None, None)
    assert send("set_level", {"n": 4}).ok and inst.context["level"] == 4
    refused = send("set_level", {"n": 99})
    assert isinstance(refused, Rejection) and refused.kind == "expression_error"
    assert refused.data["detail"] == "`level` takes an integer from 1 to 5; the actions computed 99"
    assert inst.context["level"] == 4 and inst.seq == 1
    refused = send("mark", {"n": 10})
    assert isinstance(refused, Rejection)
    assert refused.data["detail"].startswith("an item of `marks` takes an integer from 0 to 9")
    assert send("mark", {"n": 9}).ok and inst.context["marks"] == [9]


FLOAT_RANGES = """
flow franged
type R { w: float(0..1) = 0.0, label: str = "" }
context { p: float(0..1) = 0.0, r: R = {} }
event go
event setr
event big(v: float)
initial state A {
  on go -> self do p = 5.0
  on setr -> self do r = {"w": 7.5, "label": "x"}
  on big -> self
}
"""


@pytest.mark.parametrize("path", ["generated", "general"])
def test_float_literals_into_ranged_fields_are_checked(path: str) -> None:
    inst = machine(FLOAT_RANGES).start()
    send = inst.send if path == "generated" else lambda e, p: inst._send_slow(e, p, None, None)
    for event in ("go", "setr"):
        refused = send(event, None)
        assert isinstance(refused, Rejection) and refused.kind == "expression_error", event
    assert inst.context == {"p": 0.0, "r": {"w": 0.0, "label": ""}} and inst.seq == 0


@pytest.mark.parametrize("path", ["generated", "general"])
def test_unranged_ints_are_unbounded_and_ranged_ones_keep_their_range(path: str) -> None:
    # As docs/runtime.md says: 64 bits limit literals in source, not values at run time.
    flow = RANGES.replace("level: int(1..5) = 1", "level: int = 1")
    inst = machine(flow).start()
    send = inst.send if path == "generated" else lambda e, p: inst._send_slow(e, p, None, None)
    assert send("set_level", {"n": 2**70}).ok and inst.context["level"] == 2**70
    assert isinstance(send("mark", {"n": 2**70}), Rejection) and inst.context["marks"] == []


def test_numbers_past_the_largest_float_are_invalid_not_a_crash() -> None:
    m = machine(FLOAT_RANGES)
    inst = m.start()
    refused = inst.send("big", {"v": 10**309})
    assert isinstance(refused, Rejection) and refused.kind == "invalid_payload"
    assert refused.data["issues"]["invalid"][0]["problem"] == "the number is too large"
    started = m.try_start({"p": 10**400})
    assert isinstance(started, Rejection) and started.kind == "invalid_context"


def test_str_subclasses_are_plain_strings_in_enums_and_map_keys() -> None:
    class Name(str):
        pass

    m = machine(
        "flow p\nenum Color { red, green }\ncontext { c: Color = red, m: map[str, int] = {} }\n"
        "event set(c: Color, m: map[str, int])\n"
        "initial state A { on set -> self do c = event.c; m = event.m }\n"
    )
    inst = m.start()
    assert inst.send("set", {"c": Name("green"), "m": {Name("k"): 1}}).ok
    assert inst.context == {"c": "green", "m": {"k": 1}}
    assert type(inst.context["c"]) is str and all(type(k) is str for k in inst.context["m"])
    refused = inst.send("set", {"c": "green", "m": {3: 1}})
    assert isinstance(refused, Rejection) and refused.kind == "invalid_payload"


def test_events_and_targets_that_are_not_strings_are_rejections() -> None:
    m = machine("flow p\nevent go\ninitial state A { on go -> B }\nstate B { -> A }\n")
    inst = m.start()
    for event in (123, ["go"], {"go": 1}):
        refused = inst.send(event)  # type: ignore[arg-type]
        assert isinstance(refused, Rejection) and refused.kind == "unknown_event"
        assert refused.message.startswith("Unknown event '")
    for target in (["B"], 5):
        refused = inst.goto(target)  # type: ignore[arg-type]
        assert isinstance(refused, Rejection) and refused.kind == "unknown_state"
    assert inst.state == "A" and inst.seq == 0
