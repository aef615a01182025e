"""Where each part of a compiled flow was written: the spans the parser gave the declarations
and rules a flow was lowered from.

The IR keeps only a line and column per state and transition (enough for a runtime error
message); lint and the language server need whole spans, and for events, enums, records and
context fields the IR keeps none at all. Lowering fills a `SourceMap` as it builds the IR, so
positions always come from the parse tree, never from searching the text again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flowc.compiler.source import NO_SPAN, Span
from flowc.runtime.model import CompiledFlow


@dataclass
class SourceMap:
    #: state name -> the span of its name in `state NAME`
    states: dict[str, Span] = field(default_factory=dict)
    #: transition `index` -> the span of the rule it was lowered from (for an inherited
    #: transition, the rule written outside any state)
    transitions: dict[int, Span] = field(default_factory=dict)
    #: event / enum / record type / context field name -> the span of its name where declared
    events: dict[str, Span] = field(default_factory=dict)
    enums: dict[str, Span] = field(default_factory=dict)
    records: dict[str, Span] = field(default_factory=dict)
    context: dict[str, Span] = field(default_factory=dict)
    #: template source -> the span of the first text it was written in
    templates: dict[str, Span] = field(default_factory=dict)

    def state(self, name: str) -> Span:
        return self.states.get(name, NO_SPAN)

    def transition(self, index: int) -> Span:
        return self.transitions.get(index, NO_SPAN)

    @staticmethod
    def from_ir(flow: CompiledFlow) -> SourceMap:
        """The little an IR alone says about positions: where each state and rule starts.

        For a flow loaded from JSON or built by hand; declarations get no position."""
        found = SourceMap()
        for state in flow.states:
            if state.line > 0:
                start = max(state.column, 1)
                found.states[state.name] = Span(
                    state.line, start, state.line, start + len(state.name)
                )
        for t in flow.transitions:
            if t.line > 0:
                found.transitions[t.index] = Span.point(t.line, max(t.column, 1))
        return found
