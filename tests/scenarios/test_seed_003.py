"""Seed 003, interactive stage (flows/interactive_stage.flow): Discuss -> Summarize -> Serialize
with tool gating, three exits from Discuss, both modes, and the validation-retry loop."""

from __future__ import annotations

import json
from typing import Any

from flowc.runtime import Instance, Rejection

from .conftest import load, observed

STAGE = {"stage": "dream", "finalization_tool": "submit_dream", "research_tools": ["search_corpus"]}

INVALID = {
    "result": "validation_failed",
    "invalid": [
        {
            "field": "audience",
            "provided": '""',
            "problem": "empty string not allowed",
            "requirement": "non-empty string, e.g. 'adult', 'young adult'",
        }
    ],
    "missing": [{"field": "scope.target_word_count", "requirement": "integer >= 1000"}],
    "unknown": ["passages", "word_count"],
}


def start(**context: Any) -> Instance:
    return load("interactive_stage").start({**STAGE, **context})


def tools(inst: Instance) -> list[str]:
    """What the host offers the LLM in this phase (the flow's header)."""
    meta, ctx = inst.meta, inst.context
    groups = {"research": ctx["research_tools"], "finalization": [ctx["finalization_tool"]]}
    return meta["tools"] + [t for g in meta["tool_groups"] for t in groups[g]]


def to_serialize(inst: Instance) -> None:
    assert inst.send("tool_call", {"name": "ready_to_summarize"}).ok
    assert inst.send("summarized", {"summary": "A noir mystery in 1920s Lisbon."}).ok
    assert inst.state == "SERIALIZE"


def test_mode_selection() -> None:
    tty = start()
    assert (tty.state, tty.context["mode"], tty.context["max_discuss_turns"]) == (
        "DISCUSS",
        "INTERACTIVE",
        10,
    )
    assert tty.history[0].via == ("START",)
    piped = start(stdin_is_tty=False)
    assert (piped.context["mode"], piped.context["max_discuss_turns"]) == ("DIRECT", 1)
    forced = start(interactive=False)
    assert forced.context["mode"] == "DIRECT"
    forced_on = start(interactive=True, stdin_is_tty=False)
    assert forced_on.context["mode"] == "INTERACTIVE"


def test_user_done_ends_discussion() -> None:
    inst = start()
    assert inst.send("user_input", {"text": "make it darker"}).ok and inst.state == "DISCUSS"
    r = inst.send("user_input", {"text": "  /done "})
    assert r.ok and inst.state == "SUMMARIZE" and inst.context["discuss_exit"] == "USER_DONE"


def test_llm_signal_ends_discussion() -> None:
    inst = start()
    r = inst.send("tool_call", {"name": "ready_to_summarize"})
    assert r.ok and inst.state == "SUMMARIZE" and inst.context["discuss_exit"] == "LLM_SIGNAL"


def test_max_turns_interactive() -> None:
    inst = start()
    for _ in range(9):
        assert inst.send("llm_turn").ok and inst.state == "DISCUSS"
    assert inst.send("llm_turn").ok and inst.state == "SUMMARIZE"
    assert inst.context["discuss_turns"] == 10 and inst.context["discuss_exit"] == "MAX_TURNS"


def test_max_turns_direct_is_one_turn_without_user_input() -> None:
    inst = start(interactive=False)
    before = observed(inst)
    refused = inst.send("user_input", {"text": "/done"})
    assert isinstance(refused, Rejection) and refused.code == "user_input_not_accepted"
    assert refused.message == "Direct mode takes no user input."
    assert observed(inst) == before
    assert inst.send("llm_turn").ok and inst.state == "SUMMARIZE"
    assert inst.context["discuss_exit"] == "MAX_TURNS"


def test_tools_allowed_per_phase() -> None:
    inst = start()
    assert tools(inst) == ["ready_to_summarize", "search_corpus"]
    assert inst.send("tool_call", {"name": "search_corpus"}).ok and inst.state == "DISCUSS"
    banned = inst.send("tool_call", {"name": "submit_dream"})
    assert isinstance(banned, Rejection) and banned.code == "tool_not_available"
    assert banned.message == "Tool 'submit_dream' is not available in the Discuss phase."
    inst.send("tool_call", {"name": "ready_to_summarize"})
    assert tools(inst) == [] and inst.meta["tool_choice"] == "none"
    assert "tool_call" not in [e.name for e in inst.accepted_events()]
    summarize = inst.send("tool_call", {"name": "search_corpus"})
    assert isinstance(summarize, Rejection)
    assert summarize.message == "Tool 'search_corpus' is not available in the Summarize phase."
    no_input = inst.send("user_input", {"text": "hi"})
    assert isinstance(no_input, Rejection)
    assert no_input.message == "The Summarize phase takes no user input."
    inst.send("summarized", {"summary": "s"})
    assert tools(inst) == ["submit_dream"] and inst.meta["tool_choice"] == "required"
    assert inst.send("tool_call", {"name": "submit_dream"}).ok
    assert inst.send("tool_call", {"name": "search_corpus"}).code == "tool_not_available"  # type: ignore[union-attr]


def test_validation_retries_up_to_three_then_failure() -> None:
    inst = start()
    to_serialize(inst)
    for attempt in (1, 2, 3):
        r = inst.send("validated", INVALID)
        assert r.ok and inst.state == "SERIALIZE" and inst.context["retries_used"] == attempt
        feedback = json.loads(inst.render("validation_feedback"))
        assert list(feedback) == ["result", "issues", "issue_count", "action"]
        assert feedback["issue_count"] == 4
        assert feedback["issues"]["unknown"] == ["passages", "word_count"]
        assert feedback["issues"]["invalid"][0]["provided"] == ""
        assert feedback["action"] == (
            "Call submit_dream() with corrected data. Unknown fields may be typos."
        )
    last = inst.send("validated", INVALID)
    assert last.ok and inst.state == "FAILED" and inst.is_final
    assert inst.context["failure"] == "VALIDATION_RETRIES_EXHAUSTED"
    assert inst.meta["error"] == "ConversationError"


def test_valid_artifact_is_written() -> None:
    inst = start()
    to_serialize(inst)
    inst.send("validated", INVALID)
    r = inst.send("validated", {"result": "accepted"})
    assert r.ok and inst.state == "DONE" and inst.meta["outcome"] == "artifact"
    assert inst.context["feedback"] == {
        "result": "accepted",
        "issues": {"invalid": [], "missing": [], "unknown": []},
        "issue_count": 0,
        "action": "",
    }


def test_no_yaml_fallback() -> None:
    inst = start(interactive=False)
    inst.send("llm_turn")
    inst.send("summarized", {"summary": "s"})
    assert inst.send("finalization_skipped").ok
    assert inst.state == "FAILED" and inst.context["failure"] == "FINALIZATION_TOOL_SKIPPED"


def test_sandwich_prompts_per_mode() -> None:
    inst = start()
    instructions = inst.render("mode_instructions")
    reminder = inst.render("mode_reminder")
    prompt = inst.render(
        "system_prompt",
        mode_instructions=instructions,
        mode_reminder=reminder,
        artifact_description="The DREAM artifact captures genre and tone.",
    )
    assert prompt.index(instructions) < prompt.index("DREAM artifact") < prompt.index(reminder)
    assert "ready_to_summarize()" in instructions and "ready_to_summarize()" in reminder
    direct = start(interactive=False)
    assert direct.render("mode_reminder") == ""
    assert direct.render("mode_instructions").startswith("Generate the dream directly")
    assert "dream" in inst.render("summary_prompt")
