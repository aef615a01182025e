"""`test` blocks: checked like the rest of the flow, kept out of the IR, run on the runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler import compile_source
from flowc.compiler.driver import compile_file
from flowc.compiler.testing.runner import run_file

ROOT = Path(__file__).parents[2]

FLOW = """flow counter "Counter"
context {
  hints_used: int = 0
  hint_budget: int = 3
  tags: list[str]? = none
}
event hint
event finish(score: int)
initial state WORKING {
  on hint if hints_used < hint_budget -> self do hints_used += 1
  on hint reject budget_spent "No hints left."
  on finish if event.score > 5 -> DONE
  after 10m -> TIMED_OUT
  -> DONE
}
final state DONE
final state TIMED_OUT
journal log "{{ kind }} {{ source }} -> {{ target }}"
invariant within_budget: hints_used <= hint_budget
"""


def run(tests: str) -> list[tuple[str, str | None, int | None]]:
    result = compile_source(FLOW + tests, "counter.flow")
    assert result.ok, [str(d) for d in result.diagnostics]
    out = []
    for o in run_file(result).outcomes:
        failure = o.failure
        out.append(
            (o.name, failure.message if failure else None, failure.span.line if failure else None)
        )
    return out


def test_test_blocks_do_not_change_the_ir_hash() -> None:
    plain = compile_source(FLOW, "a.flow").flow
    tested = compile_source(
        FLOW + 'test "t" {\n  send hint\n  expect hints_used == 1\n}\n', "a.flow"
    )
    assert plain is not None and tested.flow is not None
    assert tested.flow.hash == plain.hash
    assert tested.flow.canonical_json() == plain.canonical_json()


@pytest.mark.parametrize("path", sorted((ROOT / "flows").glob("*.flow")), ids=lambda p: p.stem)
def test_seed_flows_keep_their_golden_hash_with_their_tests(path: Path) -> None:
    result = compile_file(path)
    assert result.symbols is not None and result.symbols.tests, "the seed flow carries tests"
    golden = ROOT / "tests" / "golden" / f"{path.stem}.json"
    assert result.flow is not None
    assert result.flow.to_json() == golden.read_text(encoding="utf-8")


def test_a_passing_test_exercises_every_kind_of_step() -> None:
    found = run(
        """
test "every step" {
  given hint_budget = 1
  given tags = ["a"]
  send hint
  expect hints_used == 1 and state.name == "WORKING"
  expect journal log "event WORKING -> WORKING"
  send hint
  expect reject budget_spent
  send finish(score: 2)
  expect reject guard_failed
  advance 10m
  expect state TIMED_OUT
  send hint
  expect reject instance_final
}
"""
    )
    assert found == [("every step", None, None)]


@pytest.mark.parametrize(
    ("steps", "message", "line"),
    [
        (
            "send hint\n  expect state DONE",
            "expected state `DONE`, the instance is in `WORKING`",
            2,
        ),
        ("send hint\n  expect hints_used == 2", "expectation does not hold", 2),
        ("given hint_budget = 0\n  send hint", "refused with `budget_spent`: No hints left.", 2),
        (
            "send hint\n  expect reject budget_spent",
            "but the step was accepted (WORKING -> WORKING)",
            2,
        ),
        ("send finish(score: 1)\n  expect reject budget_spent", "got `guard_failed`", 2),
        ('send hint\n  expect journal log "timer"', "journal `log` does not contain 'timer'", 2),
        ("given hints_used = 5\n  send hint", "invariant `within_budget` broken at the start", 0),
        (
            "advance 9m\n  expect state WORKING\n  advance 1m\n  expect state DONE",
            "in `TIMED_OUT`",
            4,
        ),
        ("goto DONE\n  back", "refused with `instance_final`", 2),
    ],
)
def test_a_failing_step_is_reported_at_its_line(steps: str, message: str, line: int) -> None:
    ((_, failure, at),) = run('\ntest "t" {\n  ' + steps + "\n}\n")
    assert failure is not None and message in failure
    first = FLOW.count("\n") + 2  # the line of `test "t" {`
    assert at == first + line


def test_an_invariant_broken_by_a_step_fails_at_that_step() -> None:
    source = FLOW.replace(
        "on finish if", "on finish if event.score == 0 -> self do hints_used += 9\n  on finish if"
    )
    result = compile_source(source + '\ntest "t" {\n  send finish(score: 0)\n}\n', "x.flow")
    ((outcome),) = run_file(result).outcomes
    assert outcome.failure is not None
    assert "invariant `within_budget` broken after this step" in outcome.failure.message
    assert outcome.failure.span.line == source.count("\n") + 3


def test_test_block_mistakes_are_diagnostics_with_did_you_mean() -> None:
    result = compile_source(
        FLOW
        + """test "bad" {
  given hint_budgt = 1
  send hnt
  send finish(scor: 1, score: "x")
  expect reject budget_spnt
  goto DNE
  expect hints_used + 1
  expect journal lg "x"
  given hints_used = hint_budget
}
test "bad" {
}
""",
        "x.flow",
    )
    found = {(d.code, d.span.line, d.help) for d in result.diagnostics}
    base = FLOW.count("\n") + 1
    assert ("E108", base + 1, "did you mean `hint_budget`?") in found
    assert ("E105", base + 2, "did you mean `hint`?") in found
    assert ("E108", base + 3, "did you mean `score`?") in found
    assert ("E201", base + 3, None) in found
    assert ("E124", base + 4, "did you mean `budget_spent`?") in found
    assert ("E104", base + 5, "did you mean `DONE`?") in found
    assert ("E205", base + 6, None) in found
    assert ("E125", base + 7, "did you mean `log`?") in found
    assert {c for c, ln, _ in found if ln == base + 8} == {"E123"}
    assert ("E103", base + 10, f"first declared on line {base}") in found
    assert result.flow is None


def test_invariants_are_type_checked_as_guards() -> None:
    result = compile_source(FLOW.replace("hints_used <= hint_budget", "hints_used + 1"), "x.flow")
    assert [d.code for d in result.errors] == ["E205"]
    result = compile_source(FLOW + "invariant within_budget: true\n", "x.flow")
    assert [d.code for d in result.errors] == ["E103"]


def test_a_field_read_only_by_an_invariant_is_not_unused() -> None:
    source = FLOW.replace(
        "  tags: list[str]? = none\n", "  tags: list[str]? = none\n  cap: int = 9\n"
    )
    warned = compile_source(source, "x.flow").warnings
    assert {d.message for d in warned if d.code == "W312"} == {
        "context field `cap` is never read or written by the flow",
        "context field `tags` is never read or written by the flow",
    }
    source = source.replace(
        "invariant within_budget: hints_used <= hint_budget", "invariant capped: hint_budget <= cap"
    )
    warned = compile_source(source, "x.flow").warnings
    assert [d.message for d in warned if d.code == "W312"] == [
        "context field `tags` is never read or written by the flow",
    ]


def test_dotted_events_and_ignored_ones_in_test_steps() -> None:
    source = """flow sensors
unhandled ignore
context { faults: int = 0 }
event fault.disk(code: int)
event fault.net
event reading(value: float)
initial state WATCH {
  on fault.* -> self do faults += 1
}
test "faults count, readings are ignored" {
  send fault.disk(code: 5)
  send fault.net
  send reading(value: 1.5)
  expect reject ignored
  expect faults == 2
}
"""
    result = compile_source(source, "sensors.flow")
    assert result.ok, [str(d) for d in result.diagnostics]
    assert [(o.name, o.failure) for o in run_file(result).outcomes] == [
        ("faults count, readings are ignored", None)
    ]


def test_advance_counts_whole_milliseconds() -> None:
    source = """flow ms
initial state A {
  after 3315ms -> B
}
final state B
test "one millisecond short, then on time" {
  advance 3314ms
  expect state A
  advance 1ms
  expect state B
}
"""
    result = compile_source(source, "ms.flow")
    assert result.ok, [str(d) for d in result.diagnostics]
    [outcome] = run_file(result).outcomes
    assert outcome.failure is None, outcome.failure.message
