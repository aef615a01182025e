"""Runs the `test` blocks of compiled flows on the real runtime (a `Machine` and one `Instance`
per test, on a fake clock), checking the flow's invariants after every step."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from flowc.compiler import ast
from flowc.compiler.driver import CompileResult
from flowc.compiler.lower import Lowerer
from flowc.compiler.resolve import Symbols
from flowc.compiler.source import Span
from flowc.compiler.testblocks import black_box_invoke, child_reads, child_symbols
from flowc.compiler.testing.moves import Move, MoveKind, MoveResult, Player, root_steps
from flowc.runtime import Instance, Rejection, StepResult


@dataclass
class Failure:
    message: str
    span: Span


@dataclass
class TestOutcome:
    file: str
    name: str
    span: Span
    failure: Failure | None
    seconds: float
    #: indices of the IR transitions the test took (refusing `reject` rules included)
    fired: set[int] = field(default_factory=set)
    #: how many times the test's steps emitted each effect, by name
    emitted: Counter[str] = field(default_factory=Counter)

    @property
    def passed(self) -> bool:
        return self.failure is None


@dataclass
class FileRun:
    """The tests of one file, or the compile result that kept them from running."""

    result: CompileResult
    outcomes: list[TestOutcome] = field(default_factory=list)

    @property
    def compiled(self) -> bool:
        return self.result.ok and self.result.symbols is not None


class _Failed(Exception):
    def __init__(self, message: str, span: Span) -> None:
        super().__init__(message)
        self.failure = Failure(message, span)


def _refusal(rejection: Rejection) -> str:
    text = f"`{rejection.code}`: {rejection.message}"
    feedback = rejection.feedback
    if feedback is not None:
        text += " " + json.dumps(feedback["issues"], ensure_ascii=False, default=repr)
    elif "detail" in rejection.data:
        text += f" ({rejection.data['detail']})"
    return text


def run_file(result: CompileResult) -> FileRun:
    run = FileRun(result)
    if not run.compiled:
        return run
    tests = FileTests(result)
    for test in tests.tests:
        run.outcomes.append(tests.run(test))
    return run


class FileTests:
    """The tests of one compiled file, each runnable on its own (the pytest plugin runs them
    one item at a time)."""

    def __init__(self, result: CompileResult) -> None:
        assert result.flow is not None and result.symbols is not None
        self.path = result.source.path
        self.tests = list(result.symbols.tests)
        self.player = Player(result.flow)
        self.lowerer = Lowerer(result.symbols)

    def run(self, test: ast.TestDecl) -> TestOutcome:
        return _run_test(self.path, test, self.player, self.lowerer)


def _run_test(path: str, test: ast.TestDecl, player: Player, lowerer: Lowerer) -> TestOutcome:
    started = time.perf_counter()
    fired: set[int] = set()
    emitted: Counter[str] = Counter()
    failure: Failure | None = None
    try:
        _steps(test, player, lowerer, fired, emitted)
    except _Failed as failed:
        failure = failed.failure
    return TestOutcome(
        path, test.name.value, test.span, failure, time.perf_counter() - started, fired, emitted
    )


def given_context(test: ast.TestDecl, lowerer: Lowerer) -> dict[str, Any]:
    """The starting context a test's `given` lines set."""
    return {s.field.name: lowerer.constant(s.value) for s in test.steps if isinstance(s, ast.Given)}


def step_move(step: ast.TestStep, lowerer: Lowerer) -> Move:
    """The move a `send`, `goto`, `back` or `advance` step makes."""
    if isinstance(step, ast.Send):
        payload = tuple((name.name, lowerer.constant(value), "") for name, value in step.payload)
        child = step.child.value if step.child is not None else ""
        # `send done.invoke.ID(...)`: the children of ID finish (a host cannot send it)
        kind: MoveKind = "end_invoke" if black_box_invoke(step.event.name) else "send"
        return Move(kind, step.event.name, payload, child=child)
    if isinstance(step, ast.Goto):
        return Move("goto", _state_name(lowerer, step.target.name), force=step.force)
    if isinstance(step, ast.Back):
        return Move("back")
    assert isinstance(step, ast.Advance)
    return Move("advance", ms=step.duration.milliseconds)


def _state_name(lowerer: Lowerer, written: str, symbols: Symbols | None = None) -> str:
    """The IR name of a state as a test writes it (a short name, or a dotted path where the
    short one is ambiguous); the checker has already refused names that mean no one state.
    `symbols`: those of the child flow the state is in (default: the test's flow)."""
    found = (symbols or lowerer.symbols).state_candidates(written)
    return found[0] if len(found) == 1 else written


def _child(instance: Instance, path: ast.Text) -> Instance:
    """The instance's child at `path`; a missing one fails the test, saying which it has."""
    try:
        return instance.child(path.value)
    except KeyError:
        pass
    kids = ", ".join(f"`{cid}`" for cid in instance.children) or "none"
    raise _Failed(f'the instance has no child "{path.value}" (its children now: {kids})', path.span)


def _steps(
    test: ast.TestDecl,
    player: Player,
    lowerer: Lowerer,
    fired: set[int],
    emitted: Counter[str],
) -> None:
    steps = test.steps
    started = player.start(given_context(test, lowerer))
    if isinstance(started, Rejection):
        raise _Failed(f"the instance could not start: {_refusal(started)}", test.name.span)
    instance: Instance = started
    fired.update(player.start_routes(instance))
    emitted.update(e["effect"] for e in instance.start_effects)
    _check_invariants(player, instance, test.name.span, "at the start")
    last: tuple[ast.TestStep, MoveResult] | None = None
    for i, step in enumerate(steps):
        if isinstance(step, ast.Given):
            continue
        if isinstance(step, ast.Send | ast.Goto | ast.Back | ast.Advance):
            following = steps[i + 1] if i + 1 < len(steps) else None
            result = _play(step, following, player, instance, lowerer, fired, emitted)
            last = (step, result)
        elif isinstance(step, ast.ExpectReject):
            assert last is not None  # the checker requires a step before
            _check_reject(step, last[1])
        elif isinstance(step, ast.ExpectState):
            _check_state(step, instance, lowerer)
        elif isinstance(step, ast.ExpectValue):
            _check_value(step, instance, player, lowerer)
        elif isinstance(step, ast.ExpectJournal):
            _check_journal(step, last)
        elif isinstance(step, ast.ExpectEffect | ast.ExpectNoEffect):
            assert last is not None  # the checker requires a step before
            _check_effect(step, last[1], lowerer)


def _play(
    step: ast.Send | ast.Goto | ast.Back | ast.Advance,
    following: ast.TestStep | None,
    player: Player,
    instance: Instance,
    lowerer: Lowerer,
    fired: set[int],
    emitted: Counter[str],
) -> MoveResult:
    """One move of a test (the rules it fired and the effects it emitted counted): refused
    only when the step after it expects the refusal; the invariants hold after an accepted
    one."""
    move = step_move(step, lowerer)
    result = player.play(instance, move)
    fired.update(result.fired)
    if not move.child:  # (a child's effects are its flow's)
        emitted.update(e["effect"] for e in emitted_effects(result))
    refused = result.rejection
    if refused is not None and not isinstance(following, ast.ExpectReject):
        raise _Failed(f"refused with {_refusal(refused)}", step.span)
    if refused is None:
        _check_invariants(player, instance, step.span, "after this step")
    return result


def _check_reject(step: ast.ExpectReject, result: MoveResult) -> None:
    """The last move, against `expect reject CODE`."""
    refused = result.rejection
    if refused is None:
        raise _Failed(
            f"expected a refusal with `{step.code.name}`, but the step was accepted"
            + _moved(result),
            step.span,
        )
    if refused.code != step.code.name:
        raise _Failed(
            f"expected a refusal with `{step.code.name}`, got {_refusal(refused)}",
            step.span,
        )


def _check_state(step: ast.ExpectState, instance: Instance, lowerer: Lowerer) -> None:
    # In a statechart the instance is in every state of its configuration: a leaf of one
    # region, the compound around it, the parallel state around both.
    symbols, who = None, "the instance"
    if step.child is not None:
        instance = _child(instance, step.child)
        found = child_symbols(lowerer.symbols, step.child.value)
        assert not isinstance(found, str)  # the checker refused paths no child can be at
        symbols, who = found, f'the child "{step.child.value}"'
    if not instance.active(_state_name(lowerer, step.state.name, symbols)):
        where = ", ".join(f"`{s}`" for s in instance.configuration)
        raise _Failed(f"expected state `{step.state.name}`, {who} is in {where}", step.span)


def _check_value(
    step: ast.ExpectValue, instance: Instance, player: Player, lowerer: Lowerer
) -> None:
    """`expect EXPR`: the expression holds of the instance now (`"PATH".field`: of its child
    at PATH)."""
    written, reads = child_reads(step.expr)
    local = {r.local: _child(instance, r.path).context.get(r.field.name) for r in reads}
    lowerer.locals += local
    try:
        expr = lowerer.expr(written).model_dump(mode="json")
    finally:
        del lowerer.locals[len(lowerer.locals) - len(local) :]
    try:
        value = player.evaluate(expr, instance, local)
    except Exception as exc:
        raise _Failed(f"could not evaluate the expectation: {exc}", step.span) from None
    if value is not True:
        read = "".join(
            f'; "{r.path.value}".{r.field.name} = {_json_text(local[r.local])}' for r in reads
        )
        raise _Failed(
            f"expectation does not hold; context: {_context_text(instance)}{read}", step.span
        )


def _check_effect(
    step: ast.ExpectEffect | ast.ExpectNoEffect, result: MoveResult, lowerer: Lowerer
) -> None:
    """The effects the last move's steps emitted, against `expect effect` / `expect no effect`."""
    emitted = emitted_effects(result)
    name = step.effect.name if step.effect is not None else None
    named = [e for e in emitted if name is None or e["effect"] == name]
    if isinstance(step, ast.ExpectNoEffect):
        if named:
            raise _Failed(
                f"expected no effect{_named(name)}, got {_effects_text(named)}", step.span
            )
        return
    wanted = {field.name: lowerer.constant(value) for field, value in step.fields}
    for effect in named:
        if all(effect["payload"].get(k, _MISSING) == v for k, v in wanted.items()):
            return
    expected = f"`{name}`" + (f" with {json.dumps(wanted, ensure_ascii=False)}" if wanted else "")
    got = _effects_text(emitted) if emitted else "no effect"
    raise _Failed(f"expected the effect {expected}, the step emitted {got}", step.span)


def emitted_effects(result: MoveResult) -> list[dict[str, Any]]:
    """Every effect a move's accepted steps emitted, in order (`{"effect", "payload"}`)."""
    steps = [x for o in result.outcomes if isinstance(o, StepResult) for x in root_steps(o)]
    return [e for step in steps for e in step.effects]


_MISSING = object()


def _named(name: str | None) -> str:
    return f" `{name}`" if name is not None else ""


def _effects_text(effects: list[dict[str, Any]]) -> str:
    text = ", ".join(
        f"{e['effect']}{json.dumps(e['payload'], ensure_ascii=False, default=repr)}"
        for e in effects
    )
    return text if len(text) <= 300 else text[:297] + "..."


def _check_journal(step: ast.ExpectJournal, last: tuple[ast.TestStep, MoveResult] | None) -> None:
    steps = [o for o in (last[1].outcomes if last else []) if isinstance(o, StepResult)]
    if not steps:
        raise _Failed("`expect journal` needs an accepted step before it", step.span)
    text = steps[-1].journal(step.journal.name)
    if step.text.value not in text:
        raise _Failed(
            f"journal `{step.journal.name}` does not contain {step.text.value!r}; it reads "
            f"{text!r}",
            step.span,
        )


def _check_invariants(player: Player, instance: Instance, span: Span, when: str) -> None:
    broken = player.broken_invariants(instance)
    if broken:
        names = ", ".join(f"`{n}`" for n in broken)
        raise _Failed(f"invariant {names} broken {when}; context: {_context_text(instance)}", span)


def _moved(result: MoveResult) -> str:
    steps = [o for o in result.outcomes if isinstance(o, StepResult)]
    if not steps:
        return ""
    return f" ({steps[0].from_} -> {steps[-1].to})"


def _context_text(instance: Instance) -> str:
    return _json_text(instance.context)


def _json_text(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
    return text if len(text) <= 300 else text[:297] + "..."
