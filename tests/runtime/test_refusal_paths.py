"""What a refusal and the first use of a (state, event) pair cost the runtime, observably: a
refusal's message is rendered only when read (and never for a text without markup), the flow's
own refusals are decided by the generated function without the general path, and a pair
takes the general path until it is hot (`Machine.hot_after`), then its generated function."""

from __future__ import annotations

from typing import Any

import pytest

from flowc.runtime import Instance, Machine, Rejection
from flowc.runtime.templating import TemplateCache

from .conftest import machine

FLOW = """
flow refusals

context { n: int = 0 }

event bump(by: int = 1)
  require event.by != 13 else unlucky "{{ event.by }} is unlucky"
event hint
event poke(k: int)
event other

initial state A {
  on bump if event.by > 5 reject too_big "{{ event.by }} is more than 5 (n is {{ context.n }})"
  on bump -> self do n += event.by
  on hint reject no_hints "  No hints here.  "
  on poke if event.k == 1 -> self
  -> B
}

state B
"""


class Renders:
    """Counts the templates rendered (by any machine)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = TemplateCache.render

        def render(cache: TemplateCache, source: str, variables: Any) -> str:
            self.count += 1
            return real(cache, source, variables)

        monkeypatch.setattr(TemplateCache, "render", render)


@pytest.mark.parametrize("hot_after", [0, 32])
def test_a_message_is_rendered_when_first_read(
    monkeypatch: pytest.MonkeyPatch, hot_after: int
) -> None:
    m = machine(FLOW)
    m.hot_after = hot_after
    renders = Renders(monkeypatch)
    inst = m.start()
    r = inst.send("bump", {"by": 7})
    assert isinstance(r, Rejection) and r.code == "too_big"
    assert renders.count == 0
    assert r.message == "7 is more than 5 (n is 0)"
    assert renders.count == 1
    assert r.to_dict()["message"] == r.message and repr(r) == repr(r)
    assert renders.count == 1  # rendered once, then kept


def test_a_message_says_what_was_true_when_refused() -> None:
    inst = machine(FLOW).start()
    refused = inst.send("bump", {"by": 9})
    required = inst.send("bump", {"by": 13})
    assert inst.send("bump", {"by": 2}).ok  # the context changes after both refusals
    refused.data["extra"] = "added by the host"
    assert refused.message == "9 is more than 5 (n is 0)"
    assert required.message == "13 is unlucky"
    assert inst.context["n"] == 2


def test_a_text_without_markup_is_never_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    m = machine(FLOW)
    renders = Renders(monkeypatch)
    r = m.start().send("hint")
    assert r.to_dict() == {
        "ok": False,
        "error": "no_hints",
        "message": "No hints here.",
        "kind": "reject",
        "state": "A",
        "event": "hint",
    }
    assert renders.count == 0


def test_rejections_made_by_hand_keep_their_message() -> None:
    r = Rejection("conflict", "conflict", "Changed meanwhile.", "A", None, {"seq": 3})
    assert r.message == "Changed meanwhile." and r.to_dict()["seq"] == 3
    r.message = "Reworded."
    assert r.to_dict()["message"] == "Reworded."
    assert r == Rejection("conflict", "conflict", "Reworded.", "A", None, {"seq": 3})


def counting_general_path(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = Instance._send_slow

    def send_slow(self: Instance, event: str, *args: Any) -> Any:
        calls.append(event)
        return real(self, event, *args)

    monkeypatch.setattr(Instance, "_send_slow", send_slow)
    return calls


def test_the_flows_refusals_are_decided_by_the_generated_function(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = counting_general_path(monkeypatch)  # before the machine generates anything
    m = machine(FLOW)
    m.hot_after = 0
    inst = m.start()
    assert inst.send("bump", {"by": 7}).kind == "reject"
    assert inst.send("bump", {"by": 13}).kind == "require"
    assert inst.send("poke", {"k": 2}).kind == "guard_failed"
    assert calls == []
    assert inst.send("bump", {"by": "x"}).kind == "invalid_payload"  # worded by the general path
    assert calls == ["bump"]


def test_a_pair_is_generated_once_it_is_hot(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting_general_path(monkeypatch)
    m = machine(FLOW)
    assert m.hot_after == 32
    inst = m.start()
    for _ in range(m.hot_after):
        assert inst.send("bump").ok
    assert m._generator is None  # no code written for the first 32 sends
    assert len(calls) == 32
    assert inst.send("bump").ok
    assert len(calls) == 32  # the 33rd: generated, and run
    assert m._generator is not None and len(m._written) == 1
    assert inst.send("bump").ok and len(calls) == 32
    assert inst.context["n"] == 34


def test_hot_after_zero_generates_on_first_use() -> None:
    m = machine(FLOW)
    m.hot_after = 0
    assert m.start().send("bump").ok
    assert list(m._written) == [("A", "bump")]


# ---- `back` rules on events need force (seed 001, NF2) ----------------------------------------

BACK_FLOW = """
flow phases

context { rounds: int = 0 }

event reopen(why: str = "")
event advance

initial state ANALYZING {
  on advance -> DRAFTING
}

state DRAFTING {
  on reopen if event.why == "" reject reason_required "Say why."
  on reopen -> ANALYZING do rounds += 1 back
  on advance -> DONE
  after 1h -> ANALYZING back
}

final state DONE
"""


@pytest.mark.parametrize("hot_after", [0, 32], ids=["generated", "general"])
def test_a_back_rule_on_an_event_needs_force(hot_after: int) -> None:
    m = machine(BACK_FLOW)
    m.hot_after = hot_after
    inst = m.start()
    assert inst.send("advance").ok
    before = inst.snapshot()
    for _ in range(3):  # the generated function, once written, refuses it too
        refused = inst.send("reopen", {"why": "scope changed"})
        assert isinstance(refused, Rejection)
        assert refused.to_dict() == {
            "ok": False,
            "error": "backward_requires_force",
            "message": "Going back from 'DRAFTING' to 'ANALYZING' needs force.",
            "from": "DRAFTING",
            "to": "ANALYZING",
            "kind": "backward_requires_force",
            "state": "DRAFTING",
            "event": "reopen",
        }
        assert inst.snapshot() == before
    assert inst.send("reopen").code == "reason_required"  # rules before it still decide
    taken = inst.send("reopen", {"why": "scope changed"}, force=True, reason="new facts")
    assert taken.ok and (taken.kind, taken.from_, taken.to, taken.reason) == (
        "event",
        "DRAFTING",
        "ANALYZING",
        "new facts",
    )
    assert inst.context["rounds"] == 1


def test_force_changes_nothing_for_a_forward_rule() -> None:
    inst = machine(BACK_FLOW).start()
    assert inst.send("advance", force=True).ok and inst.state == "DRAFTING"
    assert inst.send("advance", force=True).ok and inst.state == "DONE"


def test_a_timer_marked_back_fires_as_scheduled() -> None:
    # A timer is not a caller's move: nobody could force it, and the flow scheduled it.
    from flowc.runtime import FakeClock

    clock = FakeClock()
    inst = Machine.from_source(BACK_FLOW, clock=clock).start()
    assert inst.send("advance").ok
    clock.advance(3600)
    (fired,) = inst.advance()
    assert fired.ok and inst.state == "ANALYZING"


async def _async_send_with_force() -> str:
    from flowc.runtime.aio import AsyncInstance

    inst = AsyncInstance(machine(BACK_FLOW).start())
    await inst.send("advance")
    refused = await inst.send("reopen", {"why": "x"})
    taken = await inst.send("reopen", {"why": "x"}, force=True)
    return f"{refused.code} {taken.ok}"


def test_async_send_takes_force_too() -> None:
    import asyncio

    assert asyncio.run(_async_send_with_force()) == "backward_requires_force True"


# ---- data on the flow's own refusals (`with {...}`) -------------------------------------------

DATA_FLOW = """
flow stages

enum Stage { required, basic }

context { answers: map[str, map[str, str]] = {}, tries: list[int] = [] }

event answer(stage: Stage, answers: map[str, str])
  require event.stage == state.name
    else stage_mismatch "In '{{ expected }}', not '{{ received }}'."
    with {"expected": state.name, "received": event.stage}
event probe(i: int)

initial state required {
  on answer if len(event.answers) > 2
    reject too_many "{{ limit }} at most"
    with {"limit": 2, "given": keys(event.answers), "tries": tries}
  on answer -> basic do answers = merge(answers, {"required": event.answers})
  on probe reject probed "probed" with {"item": tries[event.i]}
}

final state basic
"""


@pytest.mark.parametrize("hot_after", [0, 32], ids=["generated", "general"])
def test_refusals_carry_the_flows_data(hot_after: int) -> None:
    m = machine(DATA_FLOW)
    m.hot_after = hot_after
    inst = m.restore(
        {"flow": "stages", "state": "required", "context": {"tries": [7]}, "history": []}
    )
    before = inst.snapshot()
    for _ in range(2):
        mismatch = inst.send("answer", {"stage": "basic", "answers": {}})
        assert mismatch.to_dict() == {
            "ok": False,
            "error": "stage_mismatch",
            "message": "In 'required', not 'basic'.",
            "expected": "required",
            "received": "basic",
            "kind": "require",
            "state": "required",
            "event": "answer",
        }
        many = inst.send("answer", {"stage": "required", "answers": dict.fromkeys("abc", "x")})
        assert isinstance(many, Rejection) and many.code == "too_many"
        assert many.data == {"limit": 2, "given": ["a", "b", "c"], "tries": [7]}
        assert many.message == "2 at most"
        many.data["tries"].append(99)  # the host's copy: the instance keeps its own
        assert inst.context["tries"] == [7]
        assert inst.snapshot() == before


@pytest.mark.parametrize("hot_after", [0, 32], ids=["generated", "general"])
def test_a_fault_in_refusal_data_is_an_expression_error(hot_after: int) -> None:
    m = machine(DATA_FLOW)
    m.hot_after = hot_after
    inst = m.start()
    r = inst.send("probe", {"i": 3})
    assert isinstance(r, Rejection) and r.code == "expression_error"
    assert "out of range" in r.data["detail"]
    assert r.data["where"].startswith("the data of rule #")


def test_refusal_data_survives_compiled_json() -> None:
    from flowc.compiler import compile_source

    flow = compile_source(DATA_FLOW, "stages.flow").flow
    assert flow is not None
    m = Machine.from_json(flow.to_json())  # hash checked: `data` is part of the canonical form
    r = m.start().send("answer", {"stage": "basic", "answers": {}})
    assert r.data == {"expected": "required", "received": "basic"}


def test_copies_and_pickles_of_a_rejection_carry_its_message() -> None:
    import copy
    import pickle

    r = machine(FLOW).start().send("bump", {"by": 8})
    assert isinstance(r, Rejection)
    for other in (copy.deepcopy(r), copy.copy(r), pickle.loads(pickle.dumps(r))):
        assert other == r and other.message == "8 is more than 5 (n is 0)"


# ---- an invalid payload's feedback is worked out when read -------------------------------------


def test_invalid_payload_feedback_is_worked_out_when_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import flowc.runtime.engine as engine_module

    calls: list[object] = []
    real = engine_module.report

    def report(t: Any, given: Any, **options: Any) -> Any:
        calls.append(given)
        return real(t, given, **options)

    monkeypatch.setattr(engine_module, "report", report)
    inst = machine(FLOW).start()
    payload: dict[str, Any] = {"by": "seven", "typo": 1}
    r = inst.send("bump", payload)
    assert isinstance(r, Rejection) and r.code == "invalid_payload" and calls == []
    payload["by"] = 7  # the host changes its payload afterwards: the feedback is of what it sent
    del payload["typo"]
    assert r.data["issue_count"] == 2 and len(calls) == 1
    assert r.message == "Invalid payload for 'bump': 2 issue(s)."
    assert r.feedback is not None and r.feedback["issues"]["unknown"] == ["typo"]
    assert (
        r.to_dict()["action"] == "Send bump again with corrected data. Unknown fields may be typos."
    )
    assert len(calls) == 1


def test_a_payload_too_deep_to_copy_is_still_refused_with_feedback() -> None:
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    r = machine(FLOW).start().send("bump", {"by": deep})
    assert isinstance(r, Rejection) and r.code == "invalid_payload"
    assert r.data["issue_count"] == 1
