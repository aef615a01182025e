"""Mermaid output: every state and every transition is in the text."""

from __future__ import annotations

from flowc.compiler.emit.labels import ANY_STATE, Highlight, edges, label_parts
from flowc.compiler.emit.mermaid import escape_label, state_id, to_mermaid
from flowc.runtime.model import CompiledFlow, State, Transition


def test_every_state_and_transition(sample: CompiledFlow) -> None:
    text = to_mermaid(sample, labels="full")
    lines = text.splitlines()
    assert lines[3] == "stateDiagram-v2"
    assert "    [*] --> DRAFT" in lines
    assert "    state ROUTE <<choice>>" in lines
    assert "    DONE --> [*]" in lines and "    CANCELLED --> [*]" in lines
    assert "    DRAFT : Author writes" in lines
    for state in sample.states:
        assert any(state.name in line for line in lines), state.name
    for e in edges(sample):
        parts = label_parts(e.transition, "full")
        if e.transition.back:
            parts.append("(back)")
        arrow = f"    {state_id(e.source)} --> {state_id(e.target)}"
        expected = arrow + (f" : {escape_label(' '.join(parts))}" if parts else "")
        assert expected in lines, expected
    assert any(line.startswith(f"    {state_id(ANY_STATE)} --> CANCELLED") for line in lines)


def test_labels_are_escaped_for_mermaid(sample: CompiledFlow) -> None:
    text = to_mermaid(sample, labels="full")
    body = text.split("stateDiagram-v2", 1)[1]
    for line in body.splitlines():
        if " : " in line:
            label = line.split(" : ", 1)[1]
            assert ";" not in label.replace("#59;", "").replace("#35;", "").replace(
                "#quot;", ""
            ).replace("#58;", "")
            assert '"' not in label


def test_highlight_classes(sample: CompiledFlow) -> None:
    mark = Highlight(current="REVIEW", steps=[("DRAFT", "ROUTE", None), ("ROUTE", "REVIEW", None)])
    text = to_mermaid(sample, highlight=mark)
    assert "    class REVIEW current" in text
    assert "    class DRAFT visited" in text  # choice states cannot be styled


def test_reserved_names_get_another_id() -> None:
    flow = CompiledFlow(
        name="x",
        states=(State(name="start", initial=True), State(name="end", kind="final")),
        transitions=(Transition(index=0, source="start", target="end", kind="direct"),),
        initial="start",
    )
    text = to_mermaid(flow)
    assert 'state "end" as s_end' in text
    assert "start --> s_end" in text


def test_renamed_states_never_take_another_state_s_id() -> None:
    from flowc.compiler import compile_source

    source = (
        "flow t\nevent go\n"
        "initial state s_end { on go -> end }\n"
        "state end { on go -> s_s_end }\n"
        "state s_s_end { on go -> DONE }\n"
        "final state DONE\n"
    )
    result = compile_source(source, "t.flow")
    assert result.flow is not None
    text = to_mermaid(result.flow)
    assert 'state "end" as s_s_s_end' in text
    assert "    s_end --> s_s_s_end : go" in text
    assert "    s_s_s_end --> s_s_end : go" in text
    assert "    s_s_end --> DONE : go" in text
