"""Markdown docs: every state, transition, event and context field is in the tables."""

from __future__ import annotations

from flowc.compiler.emit.markdown import to_markdown
from flowc.runtime.model import CompiledFlow


def section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def table_rows(block: str) -> list[list[str]]:
    rows = []
    for line in block.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            rows.append(cells)
    return rows[1:]  # without the header


def test_page(sample: CompiledFlow) -> None:
    text = to_markdown(sample, "review.svg", source_name="flows/review.flow")
    assert text.startswith("# Document review\n")
    assert "![State diagram of `review`](review.svg)" in text
    assert "`flows/review.flow`" in text
    states = table_rows(section(text, "States"))
    assert [r[0] for r in states] == [f"`{s.name}`" for s in sample.states]
    draft = states[0]
    assert draft[1] == "Author writes" and "initial" in draft[2]
    assert "`submit`" in draft[3] and "`cancel`" in draft[3]
    assert 'panel: `"editor"`' in draft[5]
    review = next(r for r in states if r[0] == "`REVIEW`")
    assert "after 2d" in review[3] and "entry: `reminders = 0`" in review[4]

    transitions = table_rows(section(text, "Transitions").split("### In every state")[0])
    own = [t for t in sample.transitions if not t.inherited]
    assert len(transitions) == len(own)
    refusal = ["`DRAFT`", "`submit`", "`len(event.text) == 0`"]
    assert transitions[0] == [*refusal, "refused: `empty_text` “Nothing to review.”", ""]
    assert any(r[3] == "`DRAFT` (back, needs force)" for r in transitions)
    assert any(r[1] == "routing" and r[2] == "`rounds > 3`" for r in transitions)
    inherited = table_rows(section(text, "Transitions").split("### In every state")[1])
    assert inherited == [["`cancel`", "", "`CANCELLED`", ""]]

    events = table_rows(section(text, "Events"))
    assert [r[0] for r in events] == ["`submit`", "`decide`", "`cancel`"]
    assert events[1][1] == "`verdict: Verdict`, `note: str`"
    context = table_rows(section(text, "Context"))
    assert context[2] == ["`notes`", "`list[str]`", "`[]`"]
    assert table_rows(section(text, "Enums")) == [["`Verdict`", "`APPROVE`, `REJECT`"]]


def test_page_without_svg_embeds_mermaid(sample: CompiledFlow) -> None:
    text = to_markdown(sample)
    assert "```mermaid\n---\ntitle: Document review\n---\nstateDiagram-v2\n" in text


def test_pipes_in_cells_are_escaped(sample: CompiledFlow) -> None:
    flow = sample.model_copy(
        update={
            "states": (sample.states[0].model_copy(update={"title": "a | b"}), *sample.states[1:])
        }
    )
    assert "| a \\| b |" in to_markdown(flow)


def test_migrations_get_a_table_and_flows_without_them_none(sample: CompiledFlow) -> None:
    from flowc.compiler import compile_source

    source = """\
flow tally
version 3
migrate from 2 { drop scratch }
migrate from 1 {
  state OPEN -> COUNTING
  field count -> total
  drop scratch, label
}
context { total: int = 0 }
event inc
initial state COUNTING { on inc -> self do total += 1 }
"""
    result = compile_source(source, "tally.flow")
    assert result.flow is not None, result.diagnostics
    text = to_markdown(result.flow)
    block = section(text, "Migrations")
    assert "restored under version 3" in block
    assert table_rows(block) == [
        ["1", "`OPEN` → `COUNTING`", "`count` → `total`", "`label`, `scratch`"],
        ["2", "", "", "`scratch`"],
    ]
    assert "## Migrations" not in to_markdown(sample)


def test_a_reentering_self_transition_is_told_apart() -> None:
    from flowc.compiler import compile_source

    source = (
        "flow f\nevent poke\nevent nudge\ninitial state A {\n"
        "  on poke -> self\n  on nudge -> self reenter\n}\n"
    )
    flow = compile_source(source, "f.flow").flow
    assert flow is not None
    text = to_markdown(flow, None)
    rows = table_rows(section(text, "Transitions"))
    assert [(r[1], r[3]) for r in rows] == [("`poke`", "stays"), ("`nudge`", "re-enters")]


INTERNAL_SOURCE = """\
flow approvals
context { approvals: int = 0, needed: int = 2 }
event approve(by: str)
internal event tally
initial state REVIEW {
  on approve -> REVIEW do approvals += 1; raise tally
  on tally if approvals >= needed -> APPROVED
  on tally -> REVIEW
}
final state APPROVED
on tally if approvals < 0 reject negative "never"
"""


def test_internal_events_are_marked_wherever_events_are_named() -> None:
    from flowc.compiler import compile_source

    flow = compile_source(INTERNAL_SOURCE, "approvals.flow").flow
    assert flow is not None
    text = to_markdown(flow, None)
    assert "· 2 events (1 internal) ·" in text
    events = section(text, "Events")
    assert "refused (`internal_event`)" in events
    rows = {r[0]: r for r in table_rows(events)}
    assert rows["`tally`"][3].startswith("internal: only the flow")
    assert not rows["`approve`"][3].startswith("internal")
    review = table_rows(section(text, "States"))[0]
    assert review[3] == "`approve`, `tally` (internal)"
    own, every = section(text, "Transitions").split("### In every state")
    tally = "`tally` (internal)"
    assert [r[1] for r in table_rows(own)] == ["`approve`", tally, tally]
    assert [r[0] for r in table_rows(every)] == [tally]


def test_a_flow_without_internal_events_keeps_its_events_table() -> None:
    from flowc.compiler import compile_source

    flow = compile_source(INTERNAL_SOURCE.replace("internal event", "event"), "a.flow").flow
    assert flow is not None
    text = to_markdown(flow, None)
    assert "internal" not in text
    assert table_rows(section(text, "Events"))[0] == ["`approve`", "`by: str`", ""]
