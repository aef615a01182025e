"""Child flows in `flowc test`, `flowc paths` and `flowc explore` (issue 28 item 7): test blocks
send to a child and read its state and context by path; `send done.invoke.ID(...)` and
`send error.invoke.ID(...)` make a child finish or fail, a black box, as the search does."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler import compile_source, fastparse
from flowc.compiler.driver import CompileResult, compile_file
from flowc.compiler.format import format_source
from flowc.compiler.parse import parse_source
from flowc.compiler.testblocks import child_symbols
from flowc.compiler.testing.moves import Move, Player
from flowc.compiler.testing.paths import generate
from flowc.compiler.testing.runner import run_file
from flowc.compiler.testing.space import Explorer
from flowc.compiler.testing.vectors import _op
from flowc.runtime import Instance

FLOWS = Path(__file__).parent / "flows"
BASKET = FLOWS / "basket.flow"

CARD = """flow card
context {
  amount: int = 0
  tries: int = 0
}
event approve
event retry
event ping
effect charged(amount: int)
initial state waiting {
  on approve -> ok do emit charged(amount: amount)
  on retry if tries >= 2 reject too_many "no more tries"
  on retry -> waiting do tries += 1
  on ping -> ok
  after 1m -> late
}
final state ok with {"receipt": "r-" + str(amount)}
final state late with {"receipt": ""}
"""

SHOP = """flow shop
context {
  total: int = 5
  receipt: str = ""
}
event buy
event ping
initial state browsing {
  on buy -> paying
}
state paying {
  invoke card(amount: total) as pay forward
  on done.invoke.pay -> paid do receipt = event.receipt
  on error.invoke.pay -> browsing
  on ping -> self
}
final state paid
"""


def shop(tests: str = "", flow: str = SHOP) -> CompileResult:
    return compile_source(flow + tests, "shop.flow", flows={"card": CARD})


def outcomes(tests: str, flow: str = SHOP) -> list[tuple[str, str | None]]:
    result = shop(tests, flow)
    assert result.ok, [str(d) for d in result.diagnostics]
    return [(o.name, o.failure.message if o.failure else None) for o in run_file(result).outcomes]


def errors(tests: str) -> list[tuple[str, str]]:
    result = shop(tests)
    return [(d.code, d.message) for d in result.diagnostics if d.severity.name == "ERROR"]


def test_the_example_flows_drive_and_inspect_their_children() -> None:
    result = compile_file(str(BASKET))
    assert result.ok, [str(d) for d in result.diagnostics]
    run = run_file(result)
    assert [(o.name, o.failure) for o in run.outcomes] == [
        ("the child pays, then each reviewer approves", None),
        ("a declined card goes back to browsing", None),
        ("the child as a black box: it finishes", None),
        ("the child as a black box: it fails", None),
    ]


def test_a_step_sent_to_a_child_moves_the_child_and_its_completion_the_parent() -> None:
    assert outcomes(
        'test "t" {\n  send buy\n  expect state waiting in "pay"\n  send retry to "pay"\n'
        '  expect "pay".tries == 1 and "pay".amount == total\n  send approve to "pay"\n'
        '  expect state paid\n  expect receipt == "r-5"\n}\n'
    ) == [("t", None)]


def test_a_refusal_an_effect_of_a_childs_step_are_the_childs() -> None:
    tests = (
        'test "t" {\n  send buy\n  send retry to "pay"\n  send retry to "pay"\n'
        '  send retry to "pay"\n  expect reject too_many\n  send approve to "pay"\n'
        "  expect effect charged(amount: 5)\n}\n"
    )
    assert outcomes(tests) == [("t", None)]
    # ... checked against the child's flow: the parent declares neither.
    assert errors(tests.replace("too_many", "too_few").replace("charged", "charge")) == [
        ("E124", "no step of this flow is refused with `too_few`"),
        ("E214", "unknown effect `charge`"),
    ]
    # After a step of the parent's, its own again.
    assert errors('test "t" {\n  send buy\n  expect effect charged\n}\n') == [
        ("E214", "unknown effect `charged`")
    ]


def test_a_wrong_expectation_about_a_child_fails_and_says_what_was_read() -> None:
    (found,) = outcomes('test "t" {\n  send buy\n  expect "pay".amount == 6\n}\n')
    assert found[1] is not None
    assert found[1].startswith("expectation does not hold")
    assert found[1].endswith('; "pay".amount = 5')
    (found,) = outcomes('test "t" {\n  send buy\n  expect state ok in "pay"\n}\n')
    assert found[1] == 'expected state `ok`, the child "pay" is in `waiting`'


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ('send approve to "pay"', "refused with `unknown_child`: The instance has no child 'pay'."),
        (
            'expect "pay".amount == 5',
            'the instance has no child "pay" (its children now: none)',
        ),
        (
            'expect state ok in "pay"',
            'the instance has no child "pay" (its children now: none)',
        ),
        (
            'send done.invoke.pay(receipt: "r")',
            "refused with `unknown_child`: The instance has no child 'pay'.",
        ),
    ],
)
def test_a_missing_child_is_a_failed_test_with_a_clear_message(steps: str, message: str) -> None:
    assert outcomes(f'test "t" {{\n  {steps}\n}}\n') == [("t", message)]


def test_a_step_to_a_missing_child_may_be_expected_refused() -> None:
    tests = 'test "t" {\n  send approve to "pay"\n  expect reject unknown_child\n}\n'
    assert outcomes(tests) == [("t", None)]


def test_a_child_finishes_or_fails_as_a_black_box() -> None:
    assert outcomes(
        'test "done" {\n  send buy\n  send done.invoke.pay(receipt: "r-1")\n'
        '  expect state paid\n  expect receipt == "r-1"\n}\n'
        'test "error" {\n  send buy\n'
        '  send error.invoke.pay(kind: "error", message: "down")\n  expect state browsing\n}\n'
    ) == [("done", None), ("error", None)]


def test_the_checker_reads_a_childs_events_states_and_fields() -> None:
    assert errors(
        'test "t" {\n  send buy\n  send aprove to "pay"\n  send approve(x: 1) to "pay"\n'
        '  expect state wating in "pay"\n  expect "pay".amont == 5\n'
        '  expect "pay".amount == "five"\n}\n'
    ) == [
        ("E105", "unknown event `aprove`"),
        ("E108", "event `approve` has no field `x`"),
        ("E104", "unknown state `wating`"),
        ("E108", "the context of child flow `card` has no field `amont`"),
        ("E201", "`int` and `str` can never be equal"),
    ]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("pya", "flow `shop` has no invoke `pya` (did you mean `pay`?)"),
        ("pay[0]", "invoke `pay` starts one child, not a fan-out: write `pay`"),
        ("pay.1.2", "`pay.1.2` is not the id of a child of invoke `pay`"),
        ("pay/x", "flow `card` has no invoke `x`"),
        ("pay[x]", "`pay[x]` is not a part of a child path"),
    ],
)
def test_a_path_no_child_can_be_at_is_an_error(path: str, message: str) -> None:
    assert errors(f'test "t" {{\n  send approve to "{path}"\n}}\n') == [("E123", message)]


def test_a_fan_out_child_is_named_by_its_position_or_its_id() -> None:
    result = compile_file(str(BASKET))
    assert result.symbols is not None
    assert not isinstance(child_symbols(result.symbols, "reviews[1]"), str)
    assert not isinstance(child_symbols(result.symbols, "reviews.3.1"), str)
    assert child_symbols(result.symbols, "reviews") == (
        "invoke `reviews` is a fan-out: name one of its children, `reviews[0]`"
    )


STEPS = """test "t" {
  send buy
  send retry to "pay"
  send approve(amount: 1) to "reviews[0]/fraud"
  send done.invoke.pay(receipt: "r")
  expect state waiting in "pay"
  expect "pay".tries == 1 and "reviews.3.0".x
}
"""


def test_both_parsers_read_the_test_steps_alike_and_the_formatter_keeps_them() -> None:
    fast = fastparse.parse_module(SHOP + STEPS)
    lark = parse_source(SHOP + STEPS, fast_path=False)
    assert fast is not None and lark.diagnostics == [] and fast == lark.module
    assert format_source(SHOP + STEPS) == SHOP + STEPS
    messy = STEPS.replace('send retry to "pay"', 'send   retry    to\t"pay"').replace(
        'expect state waiting in "pay"', 'expect  state waiting  in   "pay"'
    )
    assert format_source(SHOP + messy) == SHOP + STEPS


def test_paths_treat_a_child_as_a_black_box_that_finishes_or_fails() -> None:
    result = shop()
    assert result.flow is not None
    report = generate(result.flow)
    assert report.missing == {}
    texts = "\n".join(t.text() for t in report.tests)
    # The failure only the black box can show (the child itself never fails here).
    assert 'send error.invoke.pay(kind: "error", message: "the child failed")' in texts
    # Never an event of the child's own sent by the test, never the internal events as a
    # host's.
    assert 'to "' not in texts
    # The children ran in the search as they run on the runtime: every generated test passes
    # (`ping`, forwarded to the child, finishes it in both).
    ran = outcomes(texts + "\n")
    assert ran and all(failure is None for _, failure in ran), ran
    plain = SHOP.replace(" forward", "")
    flow = shop(flow=plain).flow
    assert flow is not None
    texts = "\n".join(t.text() for t in generate(flow).tests)
    ran = outcomes(texts + "\n", plain)
    assert ran and all(failure is None for _, failure in ran)


def test_paths_cover_counts_the_done_and_error_rules() -> None:
    result = shop()
    assert result.flow is not None
    report = generate(result.flow, cover=True)
    rules = {
        t.index
        for t in result.flow.transitions
        if t.event in ("done.invoke.pay", "error.invoke.pay")
    }
    assert len(rules) == 2
    assert rules <= set().union(*(t.covers for t in report.tests))


def test_the_search_never_sends_a_child_an_event_of_its_own() -> None:
    result = shop()
    assert result.flow is not None
    explorer = Explorer(result.flow)
    search = explorer.search(max_depth=4)
    paying = [n for n in search.nodes.values() if n.state == "paying"]
    assert paying
    for node in paying:
        moves = list(explorer.moves(node.instance))
        # No move addresses the child; its invoke may finish or fail as a black box.
        assert not [m for m in moves if m.child]
        assert {m.name for m in moves if m.kind == "end_invoke"} == {
            "done.invoke.pay",
            "error.invoke.pay",
        }
    # `ping` is forwarded to the child, which finishes on it: the search runs the child, so
    # the parent is done, as on the runtime.
    node = paying[0]
    instance, played = explorer.try_move(node, Move("send", "ping"))
    assert played.rejection is None and instance.state == "paid"


def test_with_the_real_child_a_forwarded_event_finishes_it() -> None:
    # (what the search leaves out: the same move on the runtime alone)
    result = shop()
    assert result.flow is not None
    player = Player(result.flow)
    instance = player.start({})
    assert isinstance(instance, Instance)
    player.play(instance, Move("send", "buy"))
    player.play(instance, Move("send", "ping"))
    assert instance.state == "paid"


def test_a_vector_op_names_the_child_and_the_black_box_end() -> None:
    sent = _op(Move("send", "approve", (("x", 1, "1"),), child="reviews[0]"))
    assert sent["op"] == "send" and sent["child"] == "reviews[0]"
    assert "child" not in _op(Move("send", "approve"))
    ended = _op(Move("end_invoke", "error.invoke.pay", (("kind", "k", ""),), child="a/b"))
    assert ended == {
        "op": "end_invoke",
        "invoke": "pay",
        "payload": {"kind": "k"},
        "failed": True,
        "child": "a/b",
    }
