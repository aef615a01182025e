"""Markdown documentation of a flow, from the Jinja2 template `templates/flow.md.j2`.

The Python side only turns the IR into rows of plain strings; wording and layout live in the
template, so changing the page means editing one file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

import jinja2

from flowc.compiler.emit.expr_text import actions_text, expr_text, literal_text
from flowc.compiler.emit.labels import trigger_text, type_text
from flowc.compiler.emit.mermaid import to_mermaid
from flowc.runtime.model import Action, CompiledFlow, FieldDef, Migration, State, Transition


@dataclass(frozen=True)
class _StateRow:
    anchor: str
    title: str
    kind: str
    accepts: str
    entry_exit: str
    meta: str


@dataclass(frozen=True)
class _TransitionRow:
    state: str
    trigger: str
    guard: str
    target: str
    actions: str


@dataclass(frozen=True)
class _Named:
    name: str
    payload: str = ""
    requires: str = ""
    sent_by: str = ""
    type: str = ""
    default: str = ""
    members: str = ""
    fields: str = ""


@dataclass(frozen=True)
class _MigrationRow:
    from_version: int
    states: str
    fields: str
    dropped: str


@dataclass(frozen=True)
class _Text:
    kind: str
    name: str
    text: str


def to_markdown(
    flow: CompiledFlow, svg_path: str | None = None, *, source_name: str | None = None
) -> str:
    """The documentation page of `flow`.

    `svg_path` (relative to where the page will live) embeds a rendered diagram; without it
    the page carries a Mermaid diagram, which GitHub and GitLab draw themselves.
    `source_name` is named in the page as where to make changes.
    """
    template = _environment().get_template("flow.md.j2")
    own = [t for t in flow.transitions if not t.inherited]
    by_source: dict[str, list[Transition]] = {}
    for t in sorted(flow.transitions, key=lambda t: t.index):
        by_source.setdefault(t.source, []).append(t)
    inherited = _unique_rules([t for t in flow.transitions if t.inherited])
    internal = frozenset(e.name for e in flow.events if e.internal)
    text = template.render(
        flow=flow,
        title=flow.title or flow.name,
        summary=_summary(flow, source_name),
        svg_path=svg_path,
        mermaid=None if svg_path else to_mermaid(flow),
        states=[_state_row(s, by_source.get(s.name, []), internal) for s in flow.states],
        transitions=_transition_rows(flow, own, internal),
        inherited=[_transition_row(t, "", internal) for t in inherited],
        events=[
            _Named(
                e.name,
                payload=", ".join(_field_text(f) for f in e.fields),
                requires="\n".join(f"`{expr_text(r.guard)}` else `{r.code}`" for r in e.requires),
                sent_by=_INTERNAL_SENDER if e.internal else _ANY_SENDER,
            )
            for e in flow.events
        ],
        internal=bool(internal),
        context=[
            _Named(
                f.name,
                type=f"`{type_text(f.type)}`",
                default=_default_text(f),
                members=_access_text(f),
            )
            for f in flow.context
        ],
        marked=any(f.input or f.hidden for f in flow.context),
        enums=[_Named(e.name, members=", ".join(f"`{m}`" for m in e.members)) for e in flow.enums],
        records=[
            _Named(r.name, fields=", ".join(_field_text(f) for f in r.fields)) for r in flow.records
        ],
        migrations=[_migration_row(m) for m in sorted(flow.migrations, key=_from_version)],
        texts=[
            *(_Text("message", k, v) for k, v in sorted(flow.messages.items())),
            *(_Text("journal", j.name, j.template) for j in flow.journals),
            *(_Text("template", k, v) for k, v in sorted(flow.templates.items())),
        ],
    )
    return text.rstrip("\n") + "\n"


#: Who may send an event, in the events table of a flow that has `internal` ones.
_ANY_SENDER = "hosts, tools and the flow"
_INTERNAL_SENDER = "internal: only the flow (`raise`, `send ... after`)"


def _event_text(name: str, internal: frozenset[str]) -> str:
    """An event as the state and transition tables name it: an `internal` one says so, since
    a reader looking for what a host may send must not take it for one."""
    return f"`{name}` (internal)" if name in internal else f"`{name}`"


def _from_version(m: Migration) -> int:
    return m.from_version


def _migration_row(m: Migration) -> _MigrationRow:
    def arrows(mapping: dict[str, str]) -> str:
        return ", ".join(f"`{old}` → `{new}`" for old, new in sorted(mapping.items()))

    return _MigrationRow(
        from_version=m.from_version,
        states=arrows(m.states),
        fields=arrows(m.rename),
        dropped=", ".join(f"`{name}`" for name in m.drop),
    )


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("flowc.compiler", "templates"),
        autoescape=False,  # Markdown, not HTML; cells are escaped by the `cell` filter
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["cell"] = _cell
    return env


def _cell(value: object) -> str:
    """A table cell: pipes escaped, line breaks kept as `<br>`."""
    text = "" if value is None else str(value)
    text = text.strip().replace("\\|", "|").replace("|", "\\|")
    return "<br>".join(line.strip() for line in text.splitlines())


def _code(text: str) -> str:
    if not text:
        return ""
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _summary(flow: CompiledFlow, source_name: str | None) -> str:
    def count(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    parts = [
        f"`{flow.name}`",
        f"version {flow.version}",
        count(len(flow.states), "state"),
        count(len(flow.events), "event") + _internal_count(flow),
        count(len([t for t in flow.transitions if not t.inherited]), "rule"),
    ]
    line = " · ".join(parts)
    if source_name:
        line += (
            f"\n\nGenerated by `flowc docs` from `{source_name}`: edit the flow, then "
            "regenerate, rather than editing this page."
        )
    return line


def _internal_count(flow: CompiledFlow) -> str:
    n = sum(1 for e in flow.events if e.internal)
    return f" ({n} internal)" if n else ""


def _state_row(state: State, mine: list[Transition], internal: frozenset[str]) -> _StateRow:
    kinds = []
    if state.initial:
        kinds.append("initial")
    if state.kind != "normal":
        kinds.append(state.history + " history" if state.history else state.kind)
    if state.parent is not None:
        kinds.append(f"in `{state.parent}`")
    blocks = []
    if state.entry:
        blocks.append(f"entry: {_code(actions_text(state.entry))}")
    if state.exit:
        blocks.append(f"exit: {_code(actions_text(state.exit))}")
    meta = "\n".join(
        f"{key}: {_code(json.dumps(value, ensure_ascii=False))}"
        for key, value in state.meta.items()
    )
    return _StateRow(
        anchor=f"`{state.name}`",
        title=state.title or "",
        kind=", ".join(kinds) or "",
        accepts=", ".join(_accepts(state, mine, internal)),
        entry_exit="\n".join(blocks),
        meta=meta,
    )


def _accepts(state: State, mine: list[Transition], internal: frozenset[str]) -> list[str]:
    """What a state answers to: its events (internal ones marked), its direct targets, its
    timers, `always`, and whether it routes at once (a choice)."""
    accepts: list[str] = []
    for t in mine:
        if t.kind in ("event", "reject") and t.event:
            event = _event_text(t.event, internal)
            if event not in accepts:
                accepts.append(event)
    directs = sorted({t.target for t in mine if t.kind == "direct" and t.target})
    if directs:
        accepts.append("go to " + ", ".join(f"`{d}`" for d in directs))
    accepts.extend(trigger_text(t) for t in mine if t.kind == "timer")
    if any(t.kind == "always" for t in mine):
        accepts.append("always")
    if state.kind == "choice":
        accepts.append("routes at once")
    return accepts


def _transition_rows(
    flow: CompiledFlow, transitions: list[Transition], internal: frozenset[str]
) -> list[_TransitionRow]:
    order = {s.name: i for i, s in enumerate(flow.states)}
    ordered = sorted(transitions, key=lambda t: (order.get(t.source, len(order)), t.index))
    rows: list[_TransitionRow] = []
    previous: str | None = None
    for t in ordered:
        rows.append(_transition_row(t, "" if t.source == previous else f"`{t.source}`", internal))
        previous = t.source
    return rows


def _transition_row(t: Transition, state_cell: str, internal: frozenset[str]) -> _TransitionRow:
    if t.kind in ("event", "reject"):
        trigger = _event_text(str(t.event), internal)
    elif t.kind in ("timer", "always"):
        trigger = trigger_text(t)
    elif t.kind == "direct":
        trigger = "direct"
    elif t.kind == "else":
        trigger = "else"
    else:
        trigger = "routing"
    if t.kind == "reject":
        target = f"refused: `{t.code}`"
        if t.message:
            target += f" “{t.message}”"
    elif t.target == t.source and not t.inherited:
        target = "re-enters" if t.reenter else "stays"
    else:
        target = f"`{t.target}`" if t.target != t.source else "stays"
        if t.back:
            target += " (back, needs force)"
    return _TransitionRow(
        state=state_cell,
        trigger=trigger,
        guard=_code(expr_text(t.guard)) if t.guard is not None else "",
        target=target,
        actions=_code(_actions(t.actions)),
    )


def _actions(actions: tuple[Action, ...]) -> str:
    return actions_text(actions) if actions else ""


def _unique_rules(transitions: list[Transition]) -> list[Transition]:
    """One copy of each rule written outside any state. The copy in the rule's own target
    state leads from that state to itself: another copy says where the rule leads."""
    unique: dict[tuple[int, int], Transition] = {}
    for t in sorted(transitions, key=lambda t: t.index):
        rule = (t.line, t.column)
        kept = unique.get(rule)
        if kept is None or (kept.target == kept.source and t.target != t.source):
            unique[rule] = t
    return list(unique.values())


def _field_text(f: FieldDef) -> str:
    text = f"{f.name}: {type_text(f.type)}"
    if not f.required:
        text += f" = {literal_text(f.default)}"
    return _code(text)


def _access_text(f: FieldDef) -> str:
    """What a model may do with a context field: `input` ones it may set at start, `hidden`
    ones it never reads."""
    parts = ["set at start" if f.input else "", "hidden" if f.hidden else "readable"]
    return ", ".join(p for p in parts if p)


def _default_text(f: FieldDef) -> str:
    if f.required:
        return "*(required at start)*"
    return _code(literal_text(f.default))
