"""Dispatch benchmark: the seed-004 attempt flow driven by four state machines in one run.

    python bench/dispatch.py [--episodes 3000] [--instances 10000] [--quick]
    python bench/dispatch.py --against REV [--quick]   # before/after, in one process

Contenders, each given the same 15-event episode (mode, explanation, pattern suggestions, a
chosen pattern, two hints, code, a failed test run, retry, code, passing tests, reflection) with
the same guards and context updates, and three refused events among them (a `skip` a beginner
may not make, an event the state has no rule for, a pattern chosen without the invariant
builder): agents make invalid calls all the time, so refusals are part of the hot path:

- flowc: `flows/attempt_v2.flow` compiled to JSON and loaded with `Machine.from_json`; payload
  validation and history are on (they cannot be turned off);
- hand: a hand-written dict state machine, `(state, event) -> [(guard, target, action)]`, with
  no payload validation and no history: the floor any engine is measured against;
- transitions (pytransitions) and python-statemachine, written the way their docs suggest.

Printed: events/second of each and the ratios; flowc's cost of a refusal beside an accepted
step (with and without reading its message); the cost of the first use of a (state, event)
pair in a freshly loaded machine (what a CLI run, a serverless call or a new MCP server pays;
each taken in a fresh interpreter, `--first-use`);
the memory of 10,000 idle instances (tracemalloc), the time to load a compiled 1,000-state /
3,000-transition flow, flowc's cost per event on generated flows of growing size (it
should not grow), and its cost per event in a statechart (three levels, two parallel regions,
IR version 2 written by hand: `statechart_ir`), which runs on the engine, and in
statecharts whose configuration is one leaf chain (seed 002 and `NESTED_CHART`), generated and
on the general path. Needs
the `bench` extra (`pip install -e ".[bench]"`); the figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from compile import generate  # noqa: E402  (bench/compile.py's generated flows)

from flowc.compiler import compile_file, compile_source  # noqa: E402
from flowc.runtime import Machine  # noqa: E402

Payload = dict[str, Any] | None

EPISODE: list[tuple[str, Payload]] = [
    ("set_mode", {"mode": "BEGINNER"}),
    ("skip", None),  # refused: a beginner may not skip (a `reject` rule with a template)
    (
        "submit_explanation",
        {
            "explanation": "Find two numbers that add up to the target.",
            "input_output_description": "a sorted list and a target -> two indexes",
            "constraints_description": "n <= 10^5",
            "example_walkthrough": "[1, 3, 5], 8 -> (1, 2)",
            "wrong_approach": "every pair: too slow",
            "assessment": {"status": "PASS", "strengths": ["clear"]},
        },
    ),
    (
        "suggest_patterns",
        {
            "candidates": [
                {
                    "pattern_id": "tp",
                    "name": "Two pointers",
                    "reason": "sorted",
                    "ai_confidence": 0.8,
                },
                {"pattern_id": "hm", "name": "Hash map", "reason": "lookup", "ai_confidence": 0.6},
            ]
        },
    ),
    ("submit_code", {"code": "def solve(xs, t): ..."}),  # refused: no rule for it in PLAN
    (
        "choose_pattern",  # refused: on rung 1 a beginner uses the invariant builder
        {
            "pattern_id": "tp",
            "confidence": 4,
            "invariant_text": "the answer lies between i and j",
            "evaluation": {"accepted": True, "match": "GOOD"},
        },
    ),
    (
        "choose_pattern",
        {
            "pattern_id": "tp",
            "confidence": 4,
            "invariant_text": "the answer lies between i and j",
            "invariant_template_id": "between",
            "evaluation": {"accepted": True, "match": "GOOD"},
        },
    ),
    ("request_hint", None),
    ("request_hint", None),
    ("submit_code", {"code": "def solve(xs, t): ..."}),
    (
        "tests_run",
        {
            "results": [
                {"input": "[1,3,5] 8", "expected": "(1, 2)", "actual": "None", "passed": False}
            ],
            "all_passed": False,
        },
    ),
    ("retry", None),
    ("submit_code", {"code": "def solve(xs, t): return 1, 2"}),
    (
        "tests_run",
        {
            "results": [
                {"input": "[1,3,5] 8", "expected": "(1, 2)", "actual": "(1, 2)", "passed": True}
            ],
            "all_passed": True,
        },
    ),
    (
        "submit_reflection",
        {"cues_next_time": ["sorted input: two pointers"], "invariant_summary": "i < j"},
    ),
]
FINAL = "COMPLETE"
#: The events of EPISODE that every contender must refuse (by position).
REFUSED = frozenset({1, 4, 5})


def _blank(s: str) -> bool:
    return s.strip() == ""


# ---- hand-written ---------------------------------------------------------------------------


class HandAttempt:
    """What a careful developer writes by hand: a dict of (state, event) -> candidates."""

    __slots__ = (
        "code",
        "hint_budget",
        "hints_used",
        "low_confidence",
        "mode",
        "plan",
        "reflect",
        "rung",
        "state",
        "understand",
        "verify",
    )

    def __init__(self) -> None:
        self.state = "UNDERSTAND"
        self.mode = "BEGINNER"
        self.rung = 1
        self.hint_budget = 3
        self.hints_used = 0
        self.low_confidence = 2
        self.understand: dict[str, Any] | None = None
        self.plan: dict[str, Any] | None = None
        self.code = ""
        self.verify: dict[str, Any] | None = None
        self.reflect: dict[str, Any] | None = None

    def send(self, event: str, p: Payload = None) -> bool:
        candidates = HAND_TABLE.get((self.state, event)) or HAND_ANY.get(event)
        if candidates is None:
            return False
        for guard, target, action in candidates:
            if guard is None or guard(self, p):
                if target is None:
                    return False  # a refusal rule
                if action is not None:
                    action(self, p)
                self.state = target if target != "self" else self.state
                return True
        return False


HandRule = tuple[
    Callable[[HandAttempt, Any], bool] | None, str | None, Callable[[HandAttempt, Any], None] | None
]


def _set_understand(m: HandAttempt, p: Any) -> None:
    m.understand = {
        "explanation": p["explanation"],
        "input_output_description": p.get("input_output_description", ""),
        "constraints_description": p.get("constraints_description", ""),
        "example_walkthrough": p.get("example_walkthrough", ""),
        "wrong_approach": p.get("wrong_approach", ""),
        "ai_assessment": p["assessment"],
    }


def _structured_missing(m: HandAttempt, p: Any) -> bool:
    return m.mode == "BEGINNER" and (
        _blank(p.get("input_output_description", ""))
        or _blank(p.get("constraints_description", ""))
        or _blank(p.get("example_walkthrough", ""))
        or _blank(p.get("wrong_approach", ""))
    )


def _choose(m: HandAttempt, p: Any) -> None:
    m.plan = dict(m.plan or {})
    m.plan.update(
        chosen_pattern=p["pattern_id"],
        user_confidence=p["confidence"],
        complexity=p.get("complexity"),
        invariant={
            "text": p.get("invariant_text") or "",
            "builder_used": p.get("invariant_template_id") is not None,
            "template_id": p.get("invariant_template_id"),
            "template_choices": p.get("invariant_choices"),
        },
    )


def _hint(m: HandAttempt, p: Any) -> None:
    m.hints_used += 1


def _code(m: HandAttempt, p: Any) -> None:
    m.code = p["code"]


def _tests(m: HandAttempt, p: Any) -> None:
    m.verify = {**(m.verify or {}), "test_results": p["results"]}


def _reflect(m: HandAttempt, p: Any) -> None:
    m.reflect = {"cues_next_time": p["cues_next_time"], "invariant_summary": p["invariant_summary"]}


def _mode(m: HandAttempt, p: Any) -> None:
    m.mode = p["mode"]


def _patterns(m: HandAttempt, p: Any) -> None:
    m.plan = {**(m.plan or {}), "suggested_patterns": p["candidates"]}


HAND_TABLE: dict[tuple[str, str], list[HandRule]] = {
    ("UNDERSTAND", "submit_explanation"): [
        (_structured_missing, None, None),
        (lambda m, p: p["assessment"]["status"] == "PASS", "PLAN", _set_understand),
        (None, "self", _set_understand),
    ],
    ("UNDERSTAND", "skip"): [(lambda m, p: m.mode == "EXPERT", "PLAN", None)],
    ("PLAN", "suggest_patterns"): [(None, "self", _patterns)],
    ("PLAN", "choose_pattern"): [
        (
            lambda m, p: m.mode == "BEGINNER" and p["confidence"] <= m.low_confidence,
            "self",
            _choose,
        ),
        (
            lambda m, p: (
                m.mode == "BEGINNER" and m.rung <= 2 and p.get("invariant_template_id") is None
            ),
            None,
            None,
        ),
        (
            lambda m, p: (
                m.mode == "BEGINNER"
                and p.get("invariant_text") is None
                and p.get("invariant_template_id") is None
            ),
            None,
            None,
        ),
        (lambda m, p: p["evaluation"]["accepted"], "IMPLEMENT", _choose),
        (None, "self", _choose),
    ],
    ("PLAN", "skip"): [(lambda m, p: m.mode == "EXPERT", "IMPLEMENT", None)],
    ("IMPLEMENT", "request_hint"): [
        (lambda m, p: m.hints_used < m.hint_budget, "self", _hint),
        (None, None, None),
    ],
    ("IMPLEMENT", "submit_code"): [(None, "VERIFY", _code)],
    ("VERIFY", "tests_run"): [
        (lambda m, p: p["all_passed"], "REFLECT", _tests),
        (None, "self", _tests),
    ],
    ("VERIFY", "retry"): [(None, "IMPLEMENT", None)],
    ("REFLECT", "submit_reflection"): [(None, FINAL, _reflect)],
    ("REFLECT", "skip"): [(None, FINAL, None)],
}
HAND_ANY: dict[str, list[HandRule]] = {"set_mode": [(None, "self", _mode)]}


# ---- transitions (pytransitions) ------------------------------------------------------------


def transitions_factory() -> Callable[[], Any]:
    from transitions import Machine as TMachine

    def p_of(ev: Any) -> Any:
        return ev.kwargs.get("payload")

    class Model:
        def __init__(self) -> None:
            self.mode = "BEGINNER"
            self.rung = 1
            self.hint_budget = 3
            self.hints_used = 0
            self.low_confidence = 2
            self.understand: Any = None
            self.plan: Any = None
            self.code = ""
            self.verify: Any = None
            self.reflect: Any = None

    def structured_missing(ev: Any) -> bool:
        return _structured_missing(ev.model, p_of(ev))

    def passed(ev: Any) -> bool:
        return bool(p_of(ev)["assessment"]["status"] == "PASS")

    def low_conf(ev: Any) -> bool:
        return bool(
            ev.model.mode == "BEGINNER" and p_of(ev)["confidence"] <= ev.model.low_confidence
        )

    def needs_builder(ev: Any) -> bool:
        m, p = ev.model, p_of(ev)
        return bool(m.mode == "BEGINNER" and m.rung <= 2 and p.get("invariant_template_id") is None)

    def needs_invariant(ev: Any) -> bool:
        m, p = ev.model, p_of(ev)
        return bool(
            m.mode == "BEGINNER"
            and p.get("invariant_text") is None
            and p.get("invariant_template_id") is None
        )

    def accepted(ev: Any) -> bool:
        return bool(p_of(ev)["evaluation"]["accepted"])

    def expert(ev: Any) -> bool:
        return bool(ev.model.mode == "EXPERT")

    def hints_left(ev: Any) -> bool:
        return bool(ev.model.hints_used < ev.model.hint_budget)

    def all_passed(ev: Any) -> bool:
        return bool(p_of(ev)["all_passed"])

    def act(fn: Callable[[HandAttempt, Any], None]) -> Callable[[Any], None]:
        return lambda ev: fn(ev.model, p_of(ev))

    states = ["UNDERSTAND", "PLAN", "IMPLEMENT", "VERIFY", "REFLECT", FINAL]
    spec = [
        dict(
            trigger="submit_explanation", source="UNDERSTAND", dest="PLAN",
            conditions=[passed], unless=[structured_missing], after=[act(_set_understand)],
        ),
        dict(
            trigger="submit_explanation", source="UNDERSTAND", dest=None,
            unless=[structured_missing], after=[act(_set_understand)],
        ),
        dict(trigger="skip", source="UNDERSTAND", dest="PLAN", conditions=[expert]),
        dict(trigger="suggest_patterns", source="PLAN", dest=None, after=[act(_patterns)]),
        dict(
            trigger="choose_pattern", source="PLAN", dest=None,
            conditions=[low_conf], after=[act(_choose)],
        ),
        dict(
            trigger="choose_pattern", source="PLAN", dest="IMPLEMENT",
            conditions=[accepted], unless=[needs_builder, needs_invariant], after=[act(_choose)],
        ),
        dict(
            trigger="choose_pattern", source="PLAN", dest=None,
            unless=[needs_builder, needs_invariant], after=[act(_choose)],
        ),
        dict(trigger="skip", source="PLAN", dest="IMPLEMENT", conditions=[expert]),
        dict(
            trigger="request_hint", source="IMPLEMENT", dest=None,
            conditions=[hints_left], after=[act(_hint)],
        ),
        dict(trigger="submit_code", source="IMPLEMENT", dest="VERIFY", after=[act(_code)]),
        dict(
            trigger="tests_run", source="VERIFY", dest="REFLECT",
            conditions=[all_passed], after=[act(_tests)],
        ),
        dict(trigger="tests_run", source="VERIFY", dest=None, after=[act(_tests)]),
        dict(trigger="retry", source="VERIFY", dest="IMPLEMENT"),
        dict(trigger="submit_reflection", source="REFLECT", dest=FINAL, after=[act(_reflect)]),
        dict(trigger="skip", source="REFLECT", dest=FINAL),
        dict(trigger="set_mode", source=states[:-1], dest=None, after=[act(_mode)]),
    ]  # fmt: skip

    def make() -> Any:
        model = Model()
        TMachine(
            model=model,
            states=states,
            transitions=spec,
            initial="UNDERSTAND",
            send_event=True,
            auto_transitions=False,
            ignore_invalid_triggers=True,  # an event without a rule in the state: False
        )
        return model

    return make


def transitions_send(model: Any, event: str, payload: Payload) -> Any:
    return model.trigger(event, payload=payload)


# ---- python-statemachine --------------------------------------------------------------------


#: What python-statemachine raises for a refused event (set when it is imported).
_SM_REFUSED: tuple[type[BaseException], ...] = ()


def statemachine_factory() -> Callable[[], Any]:
    global _SM_REFUSED
    from statemachine import State, StateMachine
    from statemachine.exceptions import TransitionNotAllowed

    _SM_REFUSED = (TransitionNotAllowed,)

    class Attempt(StateMachine):  # type: ignore[misc]
        UNDERSTAND = State(initial=True)
        PLAN = State()
        IMPLEMENT = State()
        VERIFY = State()
        REFLECT = State()
        COMPLETE = State(final=True)

        submit_explanation = UNDERSTAND.to(
            PLAN, cond="passed", unless="structured_missing", on="set_understand"
        ) | UNDERSTAND.to.itself(internal=True, unless="structured_missing", on="set_understand")
        skip = (
            UNDERSTAND.to(PLAN, cond="expert")
            | PLAN.to(IMPLEMENT, cond="expert")
            | REFLECT.to(COMPLETE)
        )
        suggest_patterns = PLAN.to.itself(internal=True, on="patterns")
        choose_pattern = (
            PLAN.to.itself(internal=True, cond="low_conf", on="choose")
            | PLAN.to(
                IMPLEMENT, cond="accepted", unless=["needs_builder", "needs_invariant"], on="choose"
            )
            | PLAN.to.itself(
                internal=True, unless=["needs_builder", "needs_invariant"], on="choose"
            )
        )
        request_hint = IMPLEMENT.to.itself(internal=True, cond="hints_left", on="hint")
        submit_code = IMPLEMENT.to(VERIFY, on="take_code")
        tests_run = VERIFY.to(REFLECT, cond="all_passed", on="tests") | VERIFY.to.itself(
            internal=True, on="tests"
        )
        retry = VERIFY.to(IMPLEMENT)
        submit_reflection = REFLECT.to(COMPLETE, on="do_reflect")
        set_mode = (
            UNDERSTAND.to.itself(internal=True, on="mode_set")
            | PLAN.to.itself(internal=True, on="mode_set")
            | IMPLEMENT.to.itself(internal=True, on="mode_set")
            | VERIFY.to.itself(internal=True, on="mode_set")
            | REFLECT.to.itself(internal=True, on="mode_set")
        )

        def __init__(self) -> None:
            self.mode = "BEGINNER"
            self.rung = 1
            self.hint_budget = 3
            self.hints_used = 0
            self.low_confidence = 2
            self.understand: Any = None
            self.plan: Any = None
            self.code = ""
            self.verify: Any = None
            self.reflect: Any = None
            super().__init__()

        def structured_missing(self, payload: Any) -> bool:
            return _structured_missing(self, payload)  # type: ignore[arg-type]

        def passed(self, payload: Any) -> bool:
            return bool(payload["assessment"]["status"] == "PASS")

        def expert(self) -> bool:
            return self.mode == "EXPERT"

        def low_conf(self, payload: Any) -> bool:
            return bool(self.mode == "BEGINNER" and payload["confidence"] <= self.low_confidence)

        def needs_builder(self, payload: Any) -> bool:
            return bool(
                self.mode == "BEGINNER"
                and self.rung <= 2
                and payload.get("invariant_template_id") is None
            )

        def needs_invariant(self, payload: Any) -> bool:
            return bool(
                self.mode == "BEGINNER"
                and payload.get("invariant_text") is None
                and payload.get("invariant_template_id") is None
            )

        def accepted(self, payload: Any) -> bool:
            return bool(payload["evaluation"]["accepted"])

        def hints_left(self) -> bool:
            return self.hints_used < self.hint_budget

        def all_passed(self, payload: Any) -> bool:
            return bool(payload["all_passed"])

        def set_understand(self, payload: Any) -> None:
            _set_understand(self, payload)  # type: ignore[arg-type]

        def patterns(self, payload: Any) -> None:
            _patterns(self, payload)  # type: ignore[arg-type]

        def choose(self, payload: Any) -> None:
            _choose(self, payload)  # type: ignore[arg-type]

        def hint(self) -> None:
            self.hints_used += 1

        def take_code(self, payload: Any) -> None:
            self.code = payload["code"]

        def tests(self, payload: Any) -> None:
            _tests(self, payload)  # type: ignore[arg-type]

        def do_reflect(self, payload: Any) -> None:
            _reflect(self, payload)  # type: ignore[arg-type]

        def mode_set(self, payload: Any) -> None:
            self.mode = payload["mode"]

    return Attempt


def statemachine_send(sm: Any, event: str, payload: Payload) -> bool:
    try:
        sm.send(event, payload=payload)  # raises when refused
    except _SM_REFUSED:
        return False
    return True


# ---- harness --------------------------------------------------------------------------------


class Contender:
    def __init__(
        self,
        name: str,
        make: Callable[[], Any],
        send: Callable[[Any, str, Payload], Any],
        state: Callable[[Any], str],
    ) -> None:
        self.name, self.make, self.send, self.state = name, make, send, state


def contenders() -> list[Contender]:
    compiled = compile_file(ROOT / "flows" / "attempt_v2.flow")
    assert compiled.flow is not None
    machine = Machine.from_json(compiled.flow.to_json()).preload()

    # Every contender is called the same way, a lambda around its own send, and its own result
    # returned: check_episode reads the outcome (flowc's `ok`, the others' truth).
    def flowc_send(inst: Any, event: str, payload: Payload) -> Any:
        return inst.send(event, payload)

    out = [
        Contender("flowc", machine.start, flowc_send, lambda i: i.state),
        Contender("hand", HandAttempt, lambda m, e, p: m.send(e, p), lambda m: m.state),
    ]
    try:
        out.append(
            Contender("transitions", transitions_factory(), transitions_send, lambda m: m.state)
        )
    except ImportError:
        print("(transitions is not installed: pip install -e '.[bench]')")
    try:
        out.append(
            Contender(
                "python-statemachine",
                statemachine_factory(),
                statemachine_send,
                lambda m: m.current_state_value,
            )
        )
    except ImportError:
        print("(python-statemachine is not installed: pip install -e '.[bench]')")
    return out


def check_episode(c: Contender) -> None:
    inst = c.make()
    for i, (event, payload) in enumerate(EPISODE):
        outcome = c.send(inst, event, payload)
        accepted = bool(getattr(outcome, "ok", outcome))
        if accepted != (i not in REFUSED):
            verdict = "accepted" if accepted else "refused"
            raise SystemExit(f"{c.name}: {event} (event {i}) was {verdict} in {c.state(inst)}")
    if c.state(inst) != FINAL:
        raise SystemExit(f"{c.name} ended in {c.state(inst)}, not {FINAL}")


def run_episodes(
    c: Contender, episodes: int, episode: list[tuple[str, Payload]] | None = None
) -> float:
    """Seconds for `episodes` episodes; instances are created before the clock starts."""
    send = c.send
    steps = EPISODE if episode is None else episode
    instances = [c.make() for _ in range(episodes)]
    gc.collect()
    gc.disable()
    t0 = time.perf_counter()
    for inst in instances:
        for event, payload in steps:
            send(inst, event, payload)
    dt = time.perf_counter() - t0
    gc.enable()
    return dt


def events_per_second(cs: list[Contender], episodes: int, rounds: int = 7) -> dict[str, float]:
    """Best of `rounds`, the contenders taking turns in each round, so that a busy moment of
    the machine does not fall on one contender only."""
    best = {c.name: float("inf") for c in cs}
    for _ in range(rounds):
        for c in cs:
            n = episodes if c.name in ("flowc", "hand") else max(50, episodes // 20)
            best[c.name] = min(best[c.name], run_episodes(c, n) / (n * len(EPISODE)))
    return {name: 1.0 / per_event for name, per_event in best.items()}


ACCEPTED_ONLY = [step for i, step in enumerate(EPISODE) if i not in REFUSED]


def accepted_step_cost(c: Contender, episodes: int, rounds: int = 7) -> float:
    """Microseconds per event of the episode without its refused events."""
    n = len(ACCEPTED_ONLY)
    best = min(run_episodes(c, episodes, ACCEPTED_ONLY) for _ in range(rounds))
    return best / (episodes * n) * 1e6


def _best_of(fn: Callable[[], object], n: int, rounds: int = 7) -> float:
    """Microseconds per call of `fn`, best of `rounds` runs of `n` calls."""
    best = float("inf")
    for _ in range(rounds):
        gc.disable()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - t0)
        gc.enable()
    return best / n * 1e6


def refusal_costs(machine: Machine, n: int) -> dict[str, tuple[float, float]]:
    """For each refused event of the episode (and an invalid payload): microseconds per
    refused `send`, and per refused `send` whose message is then read. A refusal leaves the
    instance as it was, so the same instance refuses the same event again and again."""
    out: dict[str, tuple[float, float]] = {}
    cases: list[tuple[str, int, Payload]] = []
    for i in sorted(REFUSED):
        event, payload = EPISODE[i]
        cases.append((event, i, payload))
    bad = dict(EPISODE[0][1] or {}, mode="SENIOR")  # not a member of the enum
    cases.append(("set_mode (invalid payload)", 0, bad))
    for label, i, payload in cases:
        event = label.split()[0]
        inst = machine.start()
        for e, p in EPISODE[:i]:
            inst.send(e, p)
        first = inst.send(event, payload)
        assert not first.ok, (label, first)
        name = f"{first.kind}: {label}"

        def bare(send: Any = inst.send, e: str = event, p: Payload = payload) -> object:
            return send(e, p)

        def read(send: Any = inst.send, e: str = event, p: Payload = payload) -> object:
            return send(e, p).message

        out[name] = (_best_of(bare, n), _best_of(read, n))
    return out


def cold_pair_costs(
    text: str, machines: int, preload: bool
) -> tuple[float, float, float, float, int]:
    """The first send of each (state, event) pair of the episode in a freshly loaded machine:
    median, 90th percentile, mean and largest microseconds, and how many first uses were timed
    (the median is the figure to read on a busy machine: one preempted send moves the mean;
    the 90th percentile is the pairs whose first use compiles large guards and action blocks)."""
    costs: list[float] = []
    for _ in range(machines):
        m = Machine.from_json(text)
        if preload:
            m.preload()
        inst = m.start()
        seen: set[tuple[str, str]] = set()
        gc.disable()
        for event, payload in EPISODE:
            pair = (inst.state, event)
            t0 = time.perf_counter()
            inst.send(event, payload)
            dt = time.perf_counter() - t0
            if pair not in seen:
                seen.add(pair)
                costs.append(dt * 1e6)
        gc.enable()
    p90 = statistics.quantiles(costs, n=10)[-1]
    return statistics.median(costs), p90, statistics.mean(costs), max(costs), len(costs)


def single_send_costs(text: str, machines: int) -> tuple[float, float, int]:
    """What a CLI run or a serverless call pays for its one send: for each (state, event) pair
    of the episode, a freshly loaded machine, the instance restored from a snapshot taken just
    before the pair in the episode (restoring not timed), then the send alone. Median and 90th
    percentile microseconds, and how many sends were timed."""
    warm = Machine.from_json(text).start()
    cases: list[tuple[dict[str, Any], str, Payload]] = []
    seen: set[tuple[str, str]] = set()
    for event, payload in EPISODE:
        if (warm.state, event) not in seen:
            seen.add((warm.state, event))
            cases.append((warm.snapshot(), event, payload))
        warm.send(event, payload)
    costs: list[float] = []
    for _ in range(machines):
        for snap, event, payload in cases:
            inst = Machine.from_json(text).restore(snap)
            gc.disable()
            t0 = time.perf_counter()
            inst.send(event, payload)
            costs.append((time.perf_counter() - t0) * 1e6)
            gc.enable()
    return statistics.median(costs), statistics.quantiles(costs, n=10)[-1], len(costs)


def first_use_figures(kind: str, text: str, quick: bool) -> Any:
    """`cold` (`cold_pair_costs` without and with `preload()`) or `single`
    (`single_send_costs`) of the compiled flow `text`."""
    if kind == "cold":
        n_machines = 20 if quick else 40
        return [cold_pair_costs(text, n_machines, preload) for preload in (False, True)]
    return single_send_costs(text, 10 if quick else 20)


def first_use_in_fresh_interpreter(kind: str, text: str, quick: bool) -> Any:
    """`first_use_figures`, each kind taken by a fresh interpreter (this script with
    `--first-use KIND`, the compiled flow on its standard input): a CLI run, a serverless
    cold start or a new MCP server loads a compiled flow and meets its first pairs with
    nothing else done in the process. Not in this process, after its throughput rounds, nor
    after compiling the flow: the objects those made and freed leave the allocator's memory
    spread out and the processor's caches colder, which moved these figures by half."""
    command = [sys.executable, str(Path(__file__).resolve()), "--first-use", kind]
    done = subprocess.run(
        command + (["--quick"] if quick else []),
        input=text,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout)


def bytes_per_instance(make: Callable[[], Any], n: int) -> float:
    make()  # first instance pays for lazily built shared structures
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    keep = [make() for _ in range(n)]
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    size = sum(s.size_diff for s in after.compare_to(before, "filename"))
    del keep
    return (size - 8 * n) / n  # less the list holding them


def load_times(states: int, repeat: int) -> dict[str, float]:
    result = compile_source(generate(states), f"bench_{states}.flow", lint=False)
    assert result.flow is not None
    text = result.flow.to_json(indent=None)
    indented = result.flow.to_json()
    flow = result.flow
    out: dict[str, list[float]] = {
        "from_json (compact file)": [],
        "from_json (indented file)": [],
        "from_json (no hash check)": [],
        "Machine(CompiledFlow)": [],
        "preload (compile all)": [],
    }
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        Machine.from_json(text)
        out["from_json (compact file)"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        Machine.from_json(indented)
        out["from_json (indented file)"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        m = Machine.from_json(text, verify_hash=False)
        out["from_json (no hash check)"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        m.preload()
        out["preload (compile all)"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        Machine(flow)
        out["Machine(CompiledFlow)"].append(time.perf_counter() - t0)
    info = {k: min(v) * 1000 for k, v in out.items()}
    info["transitions"] = len(flow.transitions)
    info["json_bytes"] = len(text)
    return info


def per_event_cost(states: int, events: int) -> float:
    """Microseconds per event on a generated flow, in the middle of it."""
    result = compile_source(generate(states), f"bench_{states}.flow", lint=False)
    assert result.flow is not None
    machine = Machine.from_json(result.flow.to_json(indent=None), verify_hash=False)
    middle = states // 2
    inst = machine.restore(
        {
            "flow": machine.name,
            "state": f"S{middle}",
            "context": {},
            "history": [],
        }
    )
    advance = {"verdict": "PASS", "score": 0.75}
    samples = []
    for _ in range(5):
        gc.disable()
        t0 = time.perf_counter()
        for _ in range(events // 2):
            inst.send("advance", advance)
            inst.send("retry")
        samples.append((time.perf_counter() - t0) / events * 1e6)
        gc.enable()
        assert inst.state == f"S{middle}", inst.state
    return min(samples)


def statechart_ir() -> dict[str, Any]:
    """A statechart of three levels with two parallel regions, as IR version 2:

        Top { Work (parallel) { Left { L1, L2 }  Right { R1, R2 } } }

    `tick` moves Left (L1 <-> L2, counting), `tock` moves Right, `ping` is a rule of Top taken
    in every leaf (an internal `-> self` with an action), `both` moves both regions at once."""

    def state(name: str, kind: str = "normal", parent: str | None = None, **kw: Any) -> Any:
        out: dict[str, Any] = {"name": name, "kind": kind, **kw}
        if parent is not None:
            out["parent"] = parent
        return out

    add = [{"op": "add", "target": ["n"], "value": {"op": "lit", "value": 1}}]
    guard = {"op": ">=", "args": [{"op": "ctx", "value": "n"}, {"op": "lit", "value": 0}]}
    rules = [
        ("L1", "L2", "tick", guard, add),
        ("L2", "L1", "tick", None, add),
        ("R1", "R2", "tock", None, None),
        ("R2", "R1", "tock", None, None),
        ("L1", "L2", "both", None, None),
        ("L2", "L1", "both", None, None),
        ("R1", "R2", "both", None, None),
        ("R2", "R1", "both", None, None),
        ("Top", "Top", "ping", None, add),
    ]
    transitions = []
    for i, (source, target, event, g, actions) in enumerate(rules):
        t: dict[str, Any] = {
            "index": i,
            "source": source,
            "target": target,
            "kind": "event",
            "event": event,
        }
        if g is not None:
            t["guard"] = g
        if actions:
            t["actions"] = actions
        transitions.append(t)
    return {
        "ir_version": 2,
        "name": "chart",
        "version": 1,
        "initial": "Top",
        "context": [{"name": "n", "type": {"kind": "int"}, "required": False, "default": 0}],
        "events": [{"name": e} for e in ("tick", "tock", "both", "ping")],
        "states": [
            state("Top", "compound", initial=True),
            state("Work", "parallel", "Top", initial=True),
            state("Left", "compound", "Work"),
            state("L1", parent="Left", initial=True),
            state("L2", parent="Left"),
            state("Right", "compound", "Work"),
            state("R1", parent="Right", initial=True),
            state("R2", parent="Right"),
        ],
        "transitions": transitions,
    }


def statechart_costs(events: int) -> dict[str, float]:
    """Microseconds per event in `statechart_ir`'s machine, best of 5, by event."""
    machine = Machine(statechart_ir()).preload()
    inst = machine.start()
    assert inst.configuration == ("Top", "Work", "Left", "L1", "Right", "R1")
    out = {}
    for label, event in [
        ("one region moves (tick)", "tick"),
        ("the other region (tock)", "tock"),
        ("both regions (both)", "both"),
        ("a rule of the top state (ping)", "ping"),
    ]:
        samples = []
        for _ in range(5):
            gc.disable()
            t0 = time.perf_counter()
            for _ in range(events):
                inst.send(event)
            samples.append((time.perf_counter() - t0) / events * 1e6)
            gc.enable()
            assert len(inst.configuration) == 6, inst.configuration
        out[label] = min(samples)
    return out


#: Three levels of compound states and no parallel one: a statechart whose configuration is
#: always one leaf and its ancestors, so its (leaf, event) pairs get generated functions.
NESTED_CHART = """
flow nested
context { n: int = 0, trail: int = 0 }
event tick
event hop
event ping
initial state Top {
  entry do trail += 1
  after 1h -> Top reenter
  on ping -> self do n += 1
  initial state Mid {
    entry do trail += 1
    exit do trail -= 1
    after 10m -> Mid reenter
    initial state A { on tick if n >= 0 -> B do n += 1 }
    state B {
      on tick -> A
      on hop -> Far
    }
  }
  state Side {
    initial state Far { on hop -> B }
  }
}
"""


def leaf_chart_costs(events: int) -> dict[str, tuple[float, float]]:
    """Microseconds per event, best of 5, generated and on the general path only, in seed
    002 (`flows/collab_skills.flow`: compound states, choice states) and `NESTED_CHART`."""
    from flowc.runtime.codegen import general

    out: dict[str, tuple[float, float]] = {}
    seed = ROOT / "flows" / "collab_skills.flow"
    nested = compile_source(NESTED_CHART, "nested.flow").flow
    assert nested is not None
    walk = [
        "brainstorming-exploring",
        "collab-clear",
        "brainstorming-clarifying",
        "collab-clear",
        "brainstorming-designing",
        "collab-clear",
        "brainstorming-validating",
    ]

    def machines(make: Callable[[], Machine]) -> tuple[Machine, Machine]:
        fast, slow = make(), make()
        fast.hot_after = 0
        slow._dispatch = lambda state, event: general(event)  # type: ignore[method-assign]
        assert fast.leaf_chart
        return fast, slow

    def seed_walk(m: Machine) -> float:
        # Seven skills inside the compound `brainstorming`, each a step between two leaves
        # (the last one leaves it through a choice state: the general path on both).
        insts = []
        for _ in range(max(1, events // len(walk))):
            inst = m.start({"project": "/p", "session": "s"})
            inst.send("set_work_items", {"items": [{"number": 1, "type": "code"}]})
            for skill in ("collab-start", "gather-session-goals", "collab-clear"):
                inst.send("complete_skill", {"skill": skill})
            insts.append(inst)
        payloads = [{"skill": skill} for skill in walk]
        gc.disable()
        t0 = time.perf_counter()
        for inst in insts:
            for p in payloads:
                inst.send("complete_skill", p)
        took = time.perf_counter() - t0
        gc.enable()
        assert insts[-1].state == "clear_pre_rough", insts[-1].state
        return took / (len(insts) * len(walk)) * 1e6

    def repeat(m: Machine, event: str, payload: Any, ctx: Any, before: list[str]) -> float:
        inst = m.start(ctx)
        for e in before:
            assert inst.send(e).ok
        for _ in range(50):  # warm: every pair generated
            assert inst.send(event, payload).ok
        gc.disable()
        t0 = time.perf_counter()
        for _ in range(events):
            inst.send(event, payload)
        took = time.perf_counter() - t0
        gc.enable()
        return took / events * 1e6

    seed_pair = machines(lambda: Machine.from_file(seed).preload())
    nested_pair = machines(lambda: Machine.from_json(nested.to_json()).preload())
    ctx = {"project": "/p", "session": "s"}
    data = {"has_snapshot": True}
    cases: list[tuple[str, Callable[[Machine], float]]] = [
        ("002: seven skills in brainstorming", seed_walk),
        (
            "002: update_session_state (top rule)",
            lambda m: repeat(m, "update_session_state", data, ctx, []),
        ),
        ("nested: tick, A <-> B (2 timers kept)", lambda m: repeat(m, "tick", None, None, [])),
        ("nested: hop, B/Far across Mid, Side", lambda m: repeat(m, "hop", None, None, ["tick"])),
        ("nested: ping, Top's -> self", lambda m: repeat(m, "ping", None, None, [])),
    ]
    for label, run in cases:
        pair = seed_pair if label.startswith("002") else nested_pair
        out[label] = (min(run(pair[0]) for _ in range(5)), min(run(pair[1]) for _ in range(5)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--episodes", type=int, default=3000)
    parser.add_argument("--instances", type=int, default=10000)
    parser.add_argument("--quick", action="store_true", help="smaller runs, for a smoke test")
    parser.add_argument(
        "--first-use",
        choices=("cold", "single"),
        help="only these first-use figures of the compiled flow on standard input, as JSON "
        "(what this script has a fresh interpreter do)",
    )
    parser.add_argument(
        "--against",
        metavar="REV",
        help="only compare dispatch with the runtime of git revision REV, in this process "
        "(bench/against.py)",
    )
    args = parser.parse_args(argv)
    if args.against:
        from against import compare

        compare(args.against, 60 if args.quick else 400)
        return 0
    if args.first_use:
        print(json.dumps(first_use_figures(args.first_use, sys.stdin.read(), args.quick)))
        return 0
    episodes = 200 if args.quick else args.episodes
    instances = 1000 if args.quick else args.instances

    print(f"Python {sys.version.split()[0]}; episode of {len(EPISODE)} events (seed 004)\n")
    cs = contenders()
    for c in cs:
        check_episode(c)

    print("events/second (best of 7 rounds, instance creation not timed):")
    rates = events_per_second(cs, episodes)
    for c in cs:
        print(f"  {c.name:22} {rates[c.name]:>12,.0f}")
    print("ratios:")
    flowc = rates["flowc"]
    print(f"  hand / flowc           {rates['hand'] / flowc:12.2f}x   (target: <= 3)")
    if "transitions" in rates:
        print(f"  flowc / transitions    {flowc / rates['transitions']:12.1f}x   (target: >= 10)")
    if "python-statemachine" in rates:
        print(
            f"  flowc / python-statemachine {flowc / rates['python-statemachine']:7.1f}x   "
            "(target: >= 100)"
        )

    flowc_c = cs[0]
    accepted = accepted_step_cost(flowc_c, episodes)
    print(
        f"\nflowc refusals (microseconds per send, best of 7; an accepted step of the "
        f"episode: {accepted:.2f}):"
    )
    print(f"  {'kind: event':48} {'refused':>8} {'ratio':>6} {'+ message':>10}")
    machine = flowc_c.make().machine
    for name, (bare, read) in refusal_costs(machine, 2000 if args.quick else 20000).items():
        print(f"  {name:48} {bare:8.2f} {bare / accepted:5.1f}x {read:10.2f}")
    print("  (target: a refusal within 2x an accepted step)")

    print("\nfirst use of a (state, event) pair in a freshly loaded machine (microseconds):")
    compiled = compile_file(ROOT / "flows" / "attempt_v2.flow")
    assert compiled.flow is not None
    text = compiled.flow.to_json()  # as `flowc compile` writes it
    where: list[tuple[str, Callable[[str], Any]]] = [
        (
            "in this process (its code warm from the rounds above: a host meeting new pairs)",
            lambda kind: first_use_figures(kind, text, args.quick),
        ),
        (
            "in a fresh interpreter (nothing done in it before: a CLI run, a cold start)",
            lambda kind: first_use_in_fresh_interpreter(kind, text, args.quick),
        ),
    ]
    labels = ("Machine.from_json", "Machine.from_json + preload()")
    for heading, figures in where:
        print(f"  {heading}:")
        for label, (median, p90, mean, worst, count) in zip(labels, figures("cold"), strict=True):
            print(
                f"    {label:31} median {median:6.1f}  p90 {p90:6.1f}  mean {mean:6.1f}"
                f"  largest {worst:7.1f}  ({count} first uses)"
            )
        median, p90, count = figures("single")
        print(
            f"    {'one send per process (restored)':31} median {median:6.1f}  p90 {p90:6.1f}"
            f"  ({count} sends)"
        )
    print("  (target: under 20)")

    print(f"\nmemory of {instances:,} idle instances (tracemalloc, bytes per instance):")
    for c in cs:
        n = instances if c.name in ("flowc", "hand") else max(100, instances // 10)
        print(f"  {c.name:22} {bytes_per_instance(c.make, n):>12,.0f}")

    print("\nloading a compiled 1,000-state flow (ms, best of 5):")
    info = load_times(1000, 5)
    transitions, size = info.pop("transitions"), info.pop("json_bytes")
    print(f"  ({transitions:.0f} transitions, {size:,.0f} bytes of JSON)")
    for k, v in info.items():
        print(f"  {k:28} {v:8.1f}")

    print("\nflowc cost per event by flow size (microseconds; should stay flat):")
    sizes = (10, 100, 1000) if args.quick else (10, 100, 1000, 10000)
    costs = [per_event_cost(n, 2000 if args.quick else 20000) for n in sizes]
    for n, cost in zip(sizes, costs, strict=True):
        print(f"  {n:>6} states   {cost:6.2f}")
    spread = max(costs) / statistics.median(costs)
    print(f"  largest / median: {spread:.2f}")

    print("\nstatechart: 3 levels, 2 parallel regions (microseconds per event, best of 5):")
    for label, cost in statechart_costs(2000 if args.quick else 20000).items():
        print(f"  {label:34} {cost:6.2f}")

    print(
        "\nstatecharts whose configuration is one leaf chain (microseconds per event, best of 5):"
    )
    print(f"  {'':40} {'generated':>9} {'general':>8}")
    for label, (fast, slow) in leaf_chart_costs(2000 if args.quick else 20000).items():
        print(f"  {label:40} {fast:9.2f} {slow:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
