"""The first use of a (state, event) pair: what it builds once and keeps must give the results
building it every time gave, and the limits hold from the very first send."""

from __future__ import annotations

from typing import Any

import pytest

from flowc.compiler import compile_source
from flowc.runtime import IRLoadError, Limits, Machine, Rejection
from flowc.runtime.limits import LimitExceeded, text_problem

FLOW = """
flow firstuse

type Inner { n: int = 0, tags: list[str] = [] }
type Outer { inner: Inner = {}, label: str = "" }

context {
  outer: Outer = {}
  level: int(1..5) = 1
  marks: list[int(0..9)] = []
  words: map[str, str] = {}
  s: str = ""
}

event put(label: str, n: int, tags: list[str])
event level(n: int)
event mark(n: int)
event word(k: str, v: str)
event grow(s: str)

initial state S {
  on put -> self do
    outer.label = event.label; outer.inner.n = event.n; outer.inner.tags = event.tags
  on level -> self do level = event.n
  on mark -> self do append(marks, event.n)
  on word -> self do words = merge(words, {event.k: event.v})
  on grow -> self do s = s + event.s
}
"""

_COMPILED: list[str] = []


def fresh(limits: Limits | None = None) -> Machine:
    """A freshly loaded machine, nothing compiled yet (no `preload()`): every send is the first
    use of its pair until the pair has been sent."""
    if not _COMPILED:
        result = compile_source(FLOW, "firstuse.flow")
        assert result.flow is not None and not result.errors
        _COMPILED.append(result.flow.to_json())
    return Machine.from_json(_COMPILED[0], limits=limits)


def test_a_target_type_is_found_once_and_is_the_type_found_every_time() -> None:
    m = fresh()
    for path in (("outer",), ("outer", "inner"), ("outer", "inner", "tags"), ("level",)):
        first = m.target_type(path)
        assert first is m._find_target_type(path)
        assert m.target_type(list(path)) is first  # a list names the same path
    for bad in (("nope",), ("outer", "nope"), ("level", "x")):
        for _ in range(2):  # an unknown path is not remembered as anything
            with pytest.raises(IRLoadError):
                m.target_type(bad)


def test_an_events_field_types_are_its_fields_types() -> None:
    m = fresh()
    for ev in m.events.values():
        assert ev.field_types == {f.name: f.type for f in ev.fields}
        assert all(ev.field_types[f.name] is f.type for f in ev.fields)


def test_actions_on_the_first_send_store_what_they_did_before() -> None:
    inst = fresh().start()
    assert inst.send("put", {"label": "a", "n": 3, "tags": ["x"]}).ok
    assert inst.context["outer"] == {"inner": {"n": 3, "tags": ["x"]}, "label": "a"}


@pytest.mark.parametrize("path", ["first send", "general", "generated"])
def test_a_normalisers_fault_is_worded_when_it_happens(path: str) -> None:
    m = fresh()
    if path == "generated":
        m.hot_after = 0
    inst = m.start()
    send = inst.send if path != "general" else lambda e, p: inst._send_slow(e, p, None, None)
    refused = send("level", {"n": 99})
    assert isinstance(refused, Rejection) and refused.kind == "expression_error"
    assert refused.data["detail"] == "`level` takes an integer from 1 to 5; the actions computed 99"
    refused = send("mark", {"n": 10})
    assert isinstance(refused, Rejection) and refused.data["detail"] == (
        "an item of `marks` takes an integer from 0 to 9; the actions computed 10"
    )
    assert inst.seq == 0 and inst.context["level"] == 1 and inst.context["marks"] == []


@pytest.mark.parametrize(
    ("limits", "event", "payload"),
    [
        (Limits(max_string=5), "grow", {"s": "abcd"}),  # the second send makes 8 characters
        (Limits(max_value_size=6), "word", {"k": "abc", "v": "de"}),  # 1 + 3 + 2, then 12
        (Limits(max_items=1), "word", {"k": "a", "v": "b"}),  # two entries
    ],
)
def test_limits_hold_from_the_first_send_of_a_pair(
    limits: Limits, event: str, payload: dict[str, Any]
) -> None:
    # Each machine is fresh: the pair's first send compiles its closures, the second is still
    # on the general path (hot_after), and with hot_after = 0 the generated code decides.
    for hot_after in (32, 0):
        m = fresh(limits)
        m.hot_after = hot_after
        inst = m.start()
        assert inst.send(event, payload).ok
        again = dict(payload, k="z") if event == "word" else payload
        refused = inst.send(event, again)
        assert isinstance(refused, Rejection) and refused.code == "limit_exceeded", refused
        assert inst.seq == 1


# ---- the size walk: its inline checks must say what the walk said, in the same order ------


def _reference_measure(limits: Limits, value: Any, depth: int, budget: list[int]) -> None:
    """The size walk as written before its leaves were checked inline: one call per value."""
    t = type(value)
    if t is str:
        problem = limits.string_problem(value)
        if problem is not None:
            raise LimitExceeded(problem)
        budget[0] -= len(value)
    elif t is int:
        problem = limits.int_problem(value)
        if problem is not None:
            raise LimitExceeded(problem)
    elif t is list or t is dict:
        if depth >= limits.max_depth:
            raise LimitExceeded(f"the value is nested more than {limits.max_depth} levels deep")
        problem = limits.items_problem(len(value))
        if problem is not None:
            raise LimitExceeded(f"the value has {problem}")
        budget[0] -= len(value)
        if t is dict:
            for k, v in value.items():
                _reference_measure(limits, k, depth + 1, budget)
                _reference_measure(limits, v, depth + 1, budget)
        else:
            for v in value:
                _reference_measure(limits, v, depth + 1, budget)
    if budget[0] < 0:
        raise LimitExceeded(
            f"the value is larger than {limits.max_value_size:,} (characters plus items)"
        )


def _verdict(check: Any, value: Any) -> str:
    try:
        check(value)
    except LimitExceeded as exc:
        return exc.detail
    return "ok"


SMALL = Limits(max_string=6, max_items=4, max_int_digits=3, max_value_size=20, max_depth=3)
VALUES: list[Any] = [
    "short",
    "toolong!",
    "é ok",
    "a\x00",
    "\udc80",
    1000,
    -999,
    True,
    1.5e300,
    None,
    ["abc", "de", 5, None],
    ["abc", "de", 5, None, 6],  # five items
    ["abcdef", "abcdef", "abcdef"],  # 3 + 18 characters: past the size at the third
    ["ok", "no\x00", 10**9],  # the NUL is found before the integer
    ["ok", 10**9, "no\x00"],
    {"k": "v", "é": "ü"},
    {"a\x00": 1},
    {"k": "\ud800"},
    {"k": ["x", ["y", ["z"]]]},  # nested past the depth
    {"aaaaaa": "bbbbbb", "cccccc": "d"},  # the size is passed by a value
    {"aaaaaa": "b", "cccccccc": 1},  # a key that is too long
    [{"x": [1, 2, 3]}, {"y": "zz"}],
    [[], {}, ""],
]


@pytest.mark.parametrize("value", VALUES)
def test_the_size_walk_says_what_it_said_before(value: Any) -> None:
    expected = _verdict(lambda v: _reference_measure(SMALL, v, 0, [SMALL.max_value_size]), value)
    assert _verdict(SMALL.check_computed, value) == expected
    if isinstance(value, str) and text_problem(value) is not None:
        assert expected != "ok"  # the cases above do reach the checks they are for


# ---- what a first use allocates --------------------------------------------------------------


def test_a_state_is_wired_on_first_use_and_is_then_a_plain_state() -> None:
    # Only a state not used yet has `__getattr__` (which wires it): a class with one sends every
    # attribute read through it, and states are read on every step.
    from flowc.runtime.flow import CState

    m = fresh()
    st = m.states["S"]
    assert type(st) is not CState and isinstance(st, CState)
    assert "put" in st.on  # the first read wires it
    assert type(st) is CState and not hasattr(CState, "__getattr__")
    assert st.on["put"][1][0].source is st


def test_the_first_use_of_a_rule_compiles_its_guard_and_actions_in_their_place() -> None:
    m = fresh()
    inst = m.start()
    (t,) = m.states["S"].on["level"][1]
    assert t.guard is None and t.actions is not None and t.plan is None
    stub = t.actions
    assert inst.send("level", {"n": 3}).ok and inst.context["level"] == 3
    assert t.actions is not stub and t.plan is not None
    assert inst.send("level", {"n": 4}).ok and inst.context["level"] == 4


def test_compiling_and_sending_make_no_closure_cells_they_do_not_use() -> None:
    # A function holding a lambda puts every variable the lambda reads into a cell on every
    # call, whichever branch runs: the compiler's per-node functions and `send` hold none.
    from flowc.runtime import expr
    from flowc.runtime.instance import Instance

    compiler = expr.ExprCompiler
    for fn in (
        compiler.compile,
        compiler._build,
        compiler._binary,
        compiler._attr,
        compiler._call,
        compiler._map,
        compiler.actions,
        compiler._action,
        expr.action_plan,
        expr._normaliser,
        Instance.send,
        Instance.goto,
    ):
        assert fn.__code__.co_cellvars == (), fn.__qualname__
