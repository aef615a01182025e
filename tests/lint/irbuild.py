"""Hand-built IR for lint tests: flows small enough to read, with source lines to point at.

`FlowBuilder` numbers rules in the order they are added and gives each a source line, so a
test can put a `# flowc: allow` comment on the line of a given rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flowc.compiler.source import SourceFile, Span
from flowc.compiler.sourcemap import SourceMap
from flowc.runtime.model import (
    Action,
    CompiledFlow,
    EnumDef,
    EventDef,
    Expr,
    FieldDef,
    State,
    Transition,
    TypeRef,
)


def lit(value: Any) -> Expr:
    return Expr(op="lit", value=value)


def ctx(name: str) -> Expr:
    return Expr(op="ctx", value=name)


def ev(name: str) -> Expr:
    return Expr(op="event", value=name)


def op(name: str, *args: Expr, value: Any = None) -> Expr:
    return Expr(op=name, args=args, value=value)


def assign(target: str, value: Expr, kind: str = "set") -> Action:
    return Action(op=kind, target=(target,), value=value)  # type: ignore[arg-type]


INT = TypeRef(kind="int")


@dataclass
class FlowBuilder:
    name: str = "demo"
    lines: list[str] = field(default_factory=lambda: ["flow demo"])
    states: list[State] = field(default_factory=list)
    transitions: list[Transition] = field(default_factory=list)
    events: list[EventDef] = field(default_factory=list)
    enums: list[EnumDef] = field(default_factory=list)
    context: list[FieldDef] = field(default_factory=list)
    initial: str | None = None
    #: Where each declaration's name is written, as lowering would record it.
    declared: SourceMap = field(default_factory=SourceMap)

    def _declare(self, table: dict[str, Span], name: str, line: int, before: str) -> None:
        column = len(before) + 1
        table[name] = Span(line, column, line, column + len(name))

    def source_map(self, flow: CompiledFlow) -> SourceMap:
        where = SourceMap.from_ir(flow)
        where.events = dict(self.declared.events)
        where.enums = dict(self.declared.enums)
        where.context = dict(self.declared.context)
        return where

    def line(self, text: str) -> int:
        self.lines.append(text)
        return len(self.lines)

    def event(self, name: str, *fields: FieldDef) -> FlowBuilder:
        self._declare(self.declared.events, name, self.line(f"event {name}"), "event ")
        self.events.append(EventDef(name=name, fields=fields))
        return self

    def enum(self, name: str, *members: str) -> FlowBuilder:
        line = self.line(f"enum {name} {{ {', '.join(members)} }}")
        self._declare(self.declared.enums, name, line, "enum ")
        self.enums.append(EnumDef(name=name, members=members))
        return self

    def field(self, name: str, type_: TypeRef = INT, default: Any = 0) -> FlowBuilder:
        line = self.line(f"context {{ {name}: {type_.name or type_.kind} }}")
        self._declare(self.declared.context, name, line, "context { ")
        self.context.append(FieldDef(name=name, type=type_, required=False, default=default))
        return self

    def state(
        self, name: str, kind: str = "normal", *, initial: bool = False, comment: str = ""
    ) -> FlowBuilder:
        prefix = "initial " if initial else ""
        prefix += "" if kind == "normal" else f"{kind} "
        line = self.line(f"{prefix}state {name}" + (f"  # {comment}" if comment else ""))
        self.states.append(
            State(name=name, kind=kind, initial=initial, line=line, column=1)  # type: ignore[arg-type]
        )
        if initial:
            self.initial = name
        return self

    def go(
        self,
        source: str,
        target: str | None,
        kind: str = "direct",
        *,
        event: str | None = None,
        guard: Expr | None = None,
        back: bool = False,
        after_ms: int | None = None,
        actions: tuple[Action, ...] = (),
        inherited: bool = False,
        comment: str = "",
        line: int | None = None,
    ) -> FlowBuilder:
        if line is None:
            text = f"  {kind} {event or ''} -> {target}" + (f"  # {comment}" if comment else "")
            line = self.line(text)
        self.transitions.append(
            Transition(
                index=len(self.transitions),
                source=source,
                target=target,
                kind=kind,  # type: ignore[arg-type]
                event=event,
                guard=guard,
                back=back,
                after_ms=after_ms,
                actions=actions,
                inherited=inherited,
                line=line,
                column=3,
            )
        )
        return self

    def on(self, source: str, event: str, target: str | None, **kw: Any) -> FlowBuilder:
        return self.go(source, target, "event", event=event, **kw)

    def build(self) -> tuple[CompiledFlow, SourceFile]:
        initial = self.initial or self.states[0].name
        flow = CompiledFlow(
            name=self.name,
            states=tuple(self.states),
            transitions=tuple(self.transitions),
            events=tuple(self.events),
            enums=tuple(self.enums),
            context=tuple(self.context),
            initial=initial,
        )
        return flow, SourceFile("demo.flow", "\n".join(self.lines) + "\n")
