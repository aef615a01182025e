"""What is where in one `.flow` file, and the answers an editor asks of it.

`FileIndex` walks the AST of a compiled file once and records every name written in it: what
it names (a state, an event, an enum or one of its members, a record type or one of its fields,
a context field, an event's payload field), where, and whether that is its declaration. Go to
definition, find references, rename and semantic tokens are lookups in that list; hover and
completion read the symbol tables. Everything here is plain Python over `CompileResult`, so it
is tested without a protocol; `flowc.compiler.lsp.server` only translates to LSP types.

Positions are the compiler's: 1-based lines, 1-based character columns, end exclusive.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import cache
from typing import Literal

from flowc.compiler import ast
from flowc.compiler import types as t
from flowc.compiler.driver import CompileResult, collector_paused
from flowc.compiler.resolve import StateNode, Symbols, resolve
from flowc.compiler.source import SourceFile, Span
from flowc.runtime.builtins import ACTION_FUNCTIONS, EXPRESSION_FUNCTIONS

Kind = Literal["state", "event", "enum", "member", "type", "field", "param", "recfield"]

#: What each kind is called in messages.
KIND_WORDS: dict[Kind, str] = {
    "state": "state",
    "event": "event",
    "enum": "enum",
    "member": "enum member",
    "type": "type",
    "field": "context field",
    "param": "event field",
    "recfield": "record field",
}

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One name written in the file. `key` identifies what it names within its kind: the name
    itself, or (owner, name) for members and fields."""

    kind: Kind
    key: tuple[str, ...]
    span: Span
    declaration: bool

    @property
    def name(self) -> str:
        return self.key[-1]


@dataclass(frozen=True, slots=True)
class Completion:
    label: str
    kind: Literal["keyword", "state", "event", "enum", "member", "field", "function", "type"]
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Outline:
    """A document symbol: a declaration, its whole extent and the span of its name."""

    name: str
    kind: Kind | Literal["flow", "context"]
    span: Span
    name_span: Span
    detail: str | None
    children: tuple[Outline, ...] = ()


@cache
def keywords() -> tuple[str, ...]:
    """The language's keywords, read from the grammar itself so they cannot drift from it."""
    from lark.lexer import PatternStr

    from flowc.compiler.parse import flow_parser

    found = {
        term.pattern.value
        for term in flow_parser().terminals
        if isinstance(term.pattern, PatternStr) and term.pattern.value.isidentifier()
    }
    return tuple(sorted(found))


class FileIndex:
    def __init__(self, result: CompileResult) -> None:
        self.source: SourceFile = result.source
        self.module = result.module
        self.types = result.types
        symbols = result.symbols
        if symbols is None and self.module is not None:
            # A file with syntax errors: the parser recovered a module; its names still help.
            try:
                symbols, _ = resolve(self.module)
            except Exception:  # a half-parsed module may break resolution
                symbols = None
        self.symbols: Symbols | None = symbols
        self.occurrences: list[Occurrence] = []
        #: (span, type) of every checked expression, for hover over an expression
        self.typed: list[tuple[Span, t.Ty]] = []
        if self.module is not None and self.symbols is not None:
            with collector_paused():  # as in the compiler: many small objects, no cycles
                self._walk(self.module, self.symbols)
        self.occurrences.sort(key=lambda o: (o.span.line, o.span.column))
        self._starts = [(o.span.line, o.span.column) for o in self.occurrences]

    # ---- lookups --------------------------------------------------------------------------

    def at(self, line: int, column: int) -> Occurrence | None:
        """The name under (or just before) the cursor at `line`:`column`."""
        i = bisect_right(self._starts, (line, column))
        touching: Occurrence | None = None
        for o in reversed(self.occurrences[max(i - 2, 0) : i]):
            if o.span.line != line or column > o.span.end_column:
                continue
            if column < o.span.end_column:
                return o
            touching = touching or o
        return touching

    def definition(self, occurrence: Occurrence) -> Occurrence | None:
        for o in self.occurrences:
            if o.declaration and o.kind == occurrence.kind and o.key == occurrence.key:
                return o
        return None

    def references(self, occurrence: Occurrence, *, declaration: bool = True) -> list[Occurrence]:
        return [
            o
            for o in self.occurrences
            if o.kind == occurrence.kind
            and o.key == occurrence.key
            and (declaration or not o.declaration)
        ]

    def rename(self, occurrence: Occurrence, new_name: str) -> list[tuple[Span, str]] | str:
        """The edits renaming what `occurrence` names everywhere in the file, or why not."""
        if not _IDENTIFIER.match(new_name):
            return f"`{new_name}` is not a name"
        if new_name in keywords() or new_name == "self":
            return f"`{new_name}` is a keyword"
        if occurrence.kind == "state" and any(
            "." in self._text(o.span) for o in self.references(occurrence)
        ):
            return "this state is written by its path somewhere; rename it in the source"
        taken = self._names_of(occurrence)
        if new_name in taken and new_name != occurrence.name:
            return f"a {KIND_WORDS[occurrence.kind]} named `{new_name}` already exists"
        return [(o.span, new_name) for o in self.references(occurrence)]

    def _names_of(self, occurrence: Occurrence) -> set[str]:
        """Names the renamed thing would clash with: those of its kind in the same owner."""
        owner = occurrence.key[:-1]
        return {
            o.name
            for o in self.occurrences
            if o.declaration and o.kind == occurrence.kind and o.key[:-1] == owner
        }

    # ---- hover ----------------------------------------------------------------------------

    def hover(self, line: int, column: int) -> tuple[str, Span] | None:
        """Markdown describing the name (or else the expression) at the position."""
        occurrence = self.at(line, column)
        if occurrence is not None and self.symbols is not None:
            text = self._describe(occurrence, self.symbols)
            if text is not None:
                return text, occurrence.span
        best: tuple[Span, t.Ty] | None = None
        for span, ty in self.typed:
            if _contains(span, line, column) and (best is None or _inside(span, best[0])):
                best = (span, ty)
        if best is not None:
            return f"```\n{self._text(best[0])}: {best[1]}\n```", best[0]
        return None

    def _describe(self, o: Occurrence, s: Symbols) -> str | None:
        kind = o.kind
        node = s.nodes.get(o.name) if kind == "state" else None
        if node is not None and isinstance(node.decl, ast.HistoryDecl):
            deep = " deep" if node.decl.deep else ""
            default = f" -> {node.decl.default.name}" if node.decl.default is not None else ""
            head = f"history{deep} {node.path[-1]}{default}"
            return f"```flow\n{head}\n```\n\nhistory of `{node.parent}`"
        if kind == "state" and o.name in s.states:
            return _describe_state(o.name, s.states[o.name], node)
        if kind == "event" and o.name in s.events:
            info = s.events[o.name]
            params = ", ".join(self._text(p.span) for p in info.decl.params)
            text = f"```flow\nevent {o.name}" + (f"({params})" if params else "") + "\n```"
            requires = [self._text(r.span) for r in info.decl.requires]
            if requires:
                text += "\n\n" + "\n".join(f"- `{r}`" for r in requires)
            return text
        if kind == "enum" and o.name in s.enums:
            members = ", ".join(m.name for m in s.enums[o.name].members)
            return f"```flow\nenum {o.name} {{ {members} }}\n```"
        if kind == "member":
            return f"```flow\n{o.key[0]}.{o.name}\n```\nmember of enum `{o.key[0]}`"
        if kind == "type" and o.name in s.records:
            fields = "\n".join(f"  {self._text(f.decl.span)}" for f in s.records[o.name].values())
            return f"```flow\ntype {o.name} {{\n{fields}\n}}\n```"
        if kind == "field" and o.name in s.context:
            return f"```flow\n{self._text(s.context[o.name].decl.span)}\n```\ncontext field"
        return self._describe_field(o, s)

    def _describe_field(self, o: Occurrence, s: Symbols) -> str | None:
        """The hover text of a field of an event or of a record type."""
        if o.kind == "param" and o.key[0] in s.events:
            param = s.events[o.key[0]].params.get(o.name)
            if param is not None:
                text = self._text(param.decl.span)
                return f"```flow\n{text}\n```\nfield of event `{o.key[0]}`"
        if o.kind == "recfield" and o.key[0] in s.records:
            field = s.records[o.key[0]].get(o.name)
            if field is not None:
                text = self._text(field.decl.span)
                return f"```flow\n{text}\n```\nfield of type `{o.key[0]}`"
        return None

    # ---- completion -----------------------------------------------------------------------

    def complete(self, line: int, column: int) -> list[Completion]:
        """What may be written at the position, judged by the text just before it."""
        return self.complete_text(self.source.line_text(line)[: column - 1], line)

    def complete_text(self, before: str, line: int) -> list[Completion]:
        """What may follow `before`, the text of `line` up to the cursor (which may differ from
        the text this index was built from: an editor asks while the user types)."""
        s = self.symbols
        if s is None:
            return [Completion(k, "keyword") for k in keywords()]
        done = re.search(r"\bon\s+done\.(state\.)?[\w.]*\Z", before)
        if done:
            if done.group(1) is None:
                return [Completion("state", "keyword", "done.state.NAME: a state completed")]
            return [Completion(n, "state", _completes(n, s)) for n in s.done_events.values()]
        target = re.search(r"->\s*([\w.]*)\Z", before)
        if target:
            return self._targets(target.group(1), s)
        if re.search(r"\b(on|reject)\s+\w*\Z", before):
            found = [Completion(n, "event", self._signature(n)) for n in s.events]
            # Completion events are declared implicitly, one per compound or parallel state.
            found += [Completion(e, "event", _completes(n, s)) for e, n in s.done_events.items()]
            return found
        if re.search(r"\bevent\.\w*\Z", before):
            return self._event_fields(line, before)
        dotted = re.search(r"\b(\w+)\.\w*\Z", before)
        if dotted:
            return self._members_of(dotted.group(1), s)
        found = [Completion(k, "keyword") for k in keywords()]
        found += [
            Completion(n, "field", self._text(i.decl.type.span)) for n, i in s.context.items()
        ]
        found += [Completion(n, "enum") for n in s.enums]
        found += [Completion(n, "member", f"{e[0]} member") for n, e in s.members.items()]
        found += [Completion(n, "type") for n in s.records]
        found += [Completion(f, "function") for f in sorted(EXPRESSION_FUNCTIONS)]
        found += [Completion(f, "function") for f in sorted(ACTION_FUNCTIONS)]
        return found

    def _targets(self, typed: str, s: Symbols) -> list[Completion]:
        """What may follow `->`: every state and history state by the name the flow writes it
        with (its IR name: the short name, or the dotted path where that is ambiguous); after
        `-> A.`, the states declared in A, by their short names."""
        if "." in typed:
            found = s.state_candidates(typed.rsplit(".", 1)[0])
            if len(found) != 1:
                return []
            kids = [s.nodes[k] for k in s.nodes[found[0]].children]
            return [Completion(k.path[-1], "state", _node_detail(k, s)) for k in kids]
        states = [Completion(n, "state", _node_detail(node, s)) for n, node in s.nodes.items()]
        return [*states, Completion("self", "keyword", "the state the rule is in")]

    def _event_fields(self, line: int, before: str) -> list[Completion]:
        assert self.symbols is not None
        events = self.symbols.events
        # The rule being written names its event on the same line (`on go if event.`) or, for
        # a `require`, the event declared around it.
        named = re.findall(r"\bon\s+(\w+)", before)
        candidates = [named[-1]] if named and named[-1] in events else []
        if not candidates:
            for name, info in events.items():
                if info.decl.span.line <= line <= info.decl.span.end_line:
                    candidates = [name]
        if not candidates:
            candidates = list(events)
        seen: dict[str, Completion] = {}
        for event in candidates:
            for name, param in events[event].params.items():
                seen.setdefault(
                    name, Completion(name, "field", f"{self._text(param.decl.type.span)} ({event})")
                )
        return list(seen.values())

    def _members_of(self, word: str, s: Symbols) -> list[Completion]:
        found: list[Completion] = []
        if word in s.enums:
            found += [Completion(m.name, "member", word) for m in s.enums[word].members]
        info = s.context.get(word)
        ty = info.ty if info is not None else None
        if isinstance(ty, t.OptionalTy):
            ty = ty.inner
        if isinstance(ty, t.RecordTy) and ty.name in s.records:
            found += [
                Completion(n, "field", self._text(f.decl.type.span))
                for n, f in s.records[ty.name].items()
            ]
        if word == "state":
            found += [Completion("name", "field"), Completion("title", "field")]
            found += [Completion("meta", "field")]
        return found

    def _signature(self, event: str) -> str:
        assert self.symbols is not None
        params = self.symbols.events[event].decl.params
        return "(" + ", ".join(self._text(p.span) for p in params) + ")" if params else ""

    # ---- outline and tokens ---------------------------------------------------------------

    def outline(self) -> list[Outline]:
        if self.module is None:
            return []
        found: list[Outline] = []
        for decl in self.module.decls:
            if isinstance(decl, ast.FlowDecl):
                found.append(
                    Outline(decl.name.name, "flow", decl.span, decl.name.span, _title(decl.title))
                )
            elif isinstance(decl, ast.EnumDecl):
                members = tuple(
                    Outline(m.name, "member", m.span, m.span, None) for m in decl.members
                )
                found.append(
                    Outline(decl.name.name, "enum", decl.span, decl.name.span, None, members)
                )
            elif isinstance(decl, ast.TypeDecl):
                fields = tuple(self._field_outline(f, "recfield") for f in decl.fields)
                found.append(
                    Outline(decl.name.name, "type", decl.span, decl.name.span, None, fields)
                )
            elif isinstance(decl, ast.ContextDecl):
                fields = tuple(self._field_outline(f, "field") for f in decl.fields)
                found.append(Outline("context", "context", decl.span, decl.span, None, fields))
            elif isinstance(decl, ast.EventDecl):
                params = tuple(self._field_outline(p, "param") for p in decl.params)
                found.append(
                    Outline(decl.name.name, "event", decl.span, decl.name.span, None, params)
                )
            elif isinstance(decl, ast.StateDecl | ast.HistoryDecl):
                found.append(_state_outline(decl))
        return found

    def _field_outline(self, decl: ast.FieldDecl, kind: Kind) -> Outline:
        return Outline(decl.name.name, kind, decl.span, decl.name.span, self._text(decl.type.span))

    # ---- the walk -------------------------------------------------------------------------

    def _add(self, kind: Kind, key: tuple[str, ...], span: Span, declaration: bool) -> None:
        self.occurrences.append(Occurrence(kind, key, span, declaration))

    def _walk(self, module: ast.Module, s: Symbols) -> None:
        for decl in module.decls:
            if isinstance(decl, ast.EnumDecl):
                self._add("enum", (decl.name.name,), decl.name.span, True)
                for m in decl.members:
                    self._add("member", (decl.name.name, m.name), m.span, True)
            elif isinstance(decl, ast.TypeDecl):
                self._record_type(decl, s)
            elif isinstance(decl, ast.ContextDecl):
                self._context(decl, s)
            elif isinstance(decl, ast.EventDecl):
                self._event(decl, s)
            elif isinstance(decl, ast.StateDecl | ast.HistoryDecl):
                self._state(decl, (), s)
            elif isinstance(decl, ast.Rule):
                self._rule(decl, s)
            elif isinstance(decl, ast.MigrateDecl):
                self._migrate(decl, s)

    def _context(self, decl: ast.ContextDecl, s: Symbols) -> None:
        for f in decl.fields:
            self._add("field", (f.name.name,), f.name.span, True)
            self._field_parts(f, s)

    def _record_type(self, decl: ast.TypeDecl, s: Symbols) -> None:
        self._add("type", (decl.name.name,), decl.name.span, True)
        for f in decl.fields:
            self._add("recfield", (decl.name.name, f.name.name), f.name.span, True)
            self._field_parts(f, s)

    def _event(self, decl: ast.EventDecl, s: Symbols) -> None:
        event = decl.name.name
        self._add("event", (event,), decl.name.span, True)
        for p in decl.params:
            self._add("param", (event, p.name.name), p.name.span, True)
            self._field_parts(p, s)
        for req in decl.requires:
            self._expr(req.guard, event, s)

    def _migrate(self, decl: ast.MigrateDecl, s: Symbols) -> None:
        """The new names a `migrate` block maps old states and fields to."""
        for item in decl.items:
            if isinstance(item, ast.MigrateMapping):
                if item.kind == "state" and item.new.name in s.states:
                    self._add("state", (item.new.name,), item.new.span, False)
                elif item.kind == "field" and item.new.name in s.context:
                    self._add("field", (item.new.name,), item.new.span, False)

    def _state(
        self, decl: ast.StateDecl | ast.HistoryDecl, outer: tuple[str, ...], s: Symbols
    ) -> None:
        path = (*outer, decl.name.name)
        # a nested state is known by its IR name (its path where its short name repeats)
        found = s.state_candidates(".".join(path)) if outer else [decl.name.name]
        self._add("state", (found[0] if found else decl.name.name,), decl.name.span, True)
        if isinstance(decl, ast.HistoryDecl):
            if decl.default is not None:
                self._state_ref(decl.default, s)
            return
        for block in decl.blocks:
            self._actions(block.actions, None, s)
        for rule in decl.rules:
            self._rule(rule, s)
        for child in decl.children:
            self._state(child, path, s)

    def _state_ref(self, written: ast.Ident, s: Symbols) -> None:
        """A state named in a rule: by its short name, or by a path that names one state."""
        if written.name in s.states:
            self._add("state", (written.name,), written.span, False)
            return
        found = s.state_candidates(written.name)
        if len(found) == 1:
            self._add("state", (found[0],), written.span, False)

    def _field_parts(self, decl: ast.FieldDecl, s: Symbols) -> None:
        self._type(decl.type, s)
        if decl.default is not None:
            self._expr(decl.default, None, s)

    def _type(self, texpr: ast.TypeExpr, s: Symbols) -> None:
        name = texpr.name.name
        if name in s.enums:
            self._add("enum", (name,), texpr.name.span, False)
        elif name in s.records:
            self._add("type", (name,), texpr.name.span, False)
        for arg in texpr.args:
            self._type(arg, s)

    def _rule(self, rule: ast.Rule, s: Symbols) -> None:
        event = rule.event.name if rule.event is not None else None
        for listed in rule.listed_events:
            if listed.name in s.events:
                self._add("event", (listed.name,), listed.span, False)
        if rule.target is not None and rule.target.name != "self":
            self._state_ref(rule.target, s)
        if rule.guard is not None:
            self._expr(rule.guard, event, s)
        self._actions(rule.actions, event, s)

    def _actions(self, actions: tuple[ast.Action, ...], event: str | None, s: Symbols) -> None:
        for action in actions:
            if isinstance(action, ast.Assign | ast.PutAction):
                self._store(action, event, s)
            elif isinstance(action, ast.ActionCall):
                for arg in action.args:
                    self._expr(arg, event, s)
            elif isinstance(action, ast.IfAction):
                self._if(action, event, s)
            elif isinstance(action, ast.ForAction):
                self._loop(action, event, s)
            elif isinstance(action, ast.CancelAction):
                self._expr(action.id, event, s)
            else:
                if isinstance(action, ast.SendAction):
                    for part in (action.id, action.delay.expr if action.delay else None):
                        if part is not None:
                            self._expr(part, event, s)
                if (
                    isinstance(action, ast.RaiseAction | ast.SendAction)
                    and action.event.name in s.events
                ):
                    self._add("event", (action.event.name,), action.event.span, False)
                for _, value in action.payload:
                    self._expr(value, event, s)

    def _store(self, action: ast.Assign | ast.PutAction, event: str | None, s: Symbols) -> None:
        """`x.f = v` and `x[k] = v`: the field written (and its record fields), and the
        expressions."""
        head, *rest = action.target
        info = s.context.get(head.name)
        if info is not None:
            self._add("field", (head.name,), head.span, False)
            self._record_path(info.ty, rest, s)
        if isinstance(action, ast.PutAction):
            self._expr(action.key, event, s)
        self._expr(action.value, event, s)

    def _if(self, action: ast.IfAction, event: str | None, s: Symbols) -> None:
        for branch in action.branches:
            if branch.guard is not None:
                self._expr(branch.guard, event, s)
            self._actions(branch.actions, event, s)

    def _loop(self, action: ast.ForAction, event: str | None, s: Symbols) -> None:
        """`for item, i in xs { … }`: the context fields it sets, the list and the body."""
        for ident in (action.item, action.index):
            if ident is not None and ident.name in s.context:
                self._add("field", (ident.name,), ident.span, False)
        self._expr(action.iterable, event, s)
        self._actions(action.actions, event, s)

    def _record_path(self, ty: t.Ty, path: list[ast.Ident], s: Symbols) -> None:
        for ident in path:
            if isinstance(ty, t.OptionalTy):
                ty = ty.inner
            if not isinstance(ty, t.RecordTy) or ident.name not in s.records.get(ty.name, {}):
                return
            self._add("recfield", (ty.name, ident.name), ident.span, False)
            ty = s.records[ty.name][ident.name].ty

    def _expr(self, root: ast.Expr, event: str | None, s: Symbols) -> None:
        stack: list[ast.Expr] = [root]
        while stack:
            e = stack.pop()
            ty = self.types.get(id(e))
            if ty is not None:
                self.typed.append((e.span, ty))
            if isinstance(e, ast.Name):
                self._name(e, s)
            elif isinstance(e, ast.EventField):
                self._event_field(e, event, s)
            elif isinstance(e, ast.Attribute) and self._attribute(e, s):
                continue
            stack += _subexpressions(e)

    def _name(self, e: ast.Name, s: Symbols) -> None:
        """A bare name: a context field, or an enum member only one enum has."""
        if e.name in s.context:
            self._add("field", (e.name,), e.span, False)
        elif len(s.members.get(e.name, ())) == 1:
            self._add("member", (s.members[e.name][0], e.name), e.span, False)

    def _event_field(self, e: ast.EventField, event: str | None, s: Symbols) -> None:
        """`event.x`: a field of the rule's event (its name only, written on one line)."""
        info = s.events.get(event) if event is not None else None
        if info is not None and e.name in info.params and e.span.line == e.span.end_line:
            start = e.span.end_column - len(e.name)
            span = Span(e.span.line, start, e.span.line, e.span.end_column)
            self._add("param", (event, e.name), span, False)  # type: ignore[arg-type]

    def _attribute(self, e: ast.Attribute, s: Symbols) -> bool:
        """`Enum.member` (True: nothing inside it to walk), or `x.field` of a record."""
        obj = e.obj
        if isinstance(obj, ast.Name) and s.is_enum_member(obj.name, e.name.name):
            self._add("enum", (obj.name,), obj.span, False)
            self._add("member", (obj.name, e.name.name), e.name.span, False)
            return True
        owner = self.types.get(id(obj))
        if isinstance(owner, t.OptionalTy):
            owner = owner.inner
        if isinstance(owner, t.RecordTy) and e.name.name in s.records.get(owner.name, {}):
            self._add("recfield", (owner.name, e.name.name), e.name.span, False)
        return False

    # ---- text -----------------------------------------------------------------------------

    def _text(self, span: Span) -> str:
        """The source text of `span`, on one line (a multi-line span's lines joined)."""
        if span.line == span.end_line:
            return self.source.line_text(span.line)[span.column - 1 : span.end_column - 1]
        lines = [self.source.line_text(span.line)[span.column - 1 :]]
        lines += [self.source.line_text(n) for n in range(span.line + 1, span.end_line)]
        lines.append(self.source.line_text(span.end_line)[: span.end_column - 1])
        return " ".join(part.strip() for part in lines)


def _describe_state(name: str, decl: ast.StateDecl, node: StateNode | None) -> str:
    """The hover text of a state: its declaration's head, where it is, its children, title,
    meta and number of rules."""
    modifiers = " ".join(m.name for m in decl.modifiers)
    head = f"{modifiers} state {name}".strip()
    lines = [f"```flow\n{head}\n```"]
    if node is not None and node.parent is not None:
        lines.append(f"inside `{node.parent}`")
    if node is not None and node.kind in ("compound", "parallel"):
        count = len(node.children)
        lines.append(f"{node.kind}, {count} child state{'' if count == 1 else 's'}")
    if decl.title is not None:
        lines.append(decl.title.value)
    meta: dict[str, object] = {}
    for block in decl.metas:
        meta.update(block.value)
    if meta:
        shown = json.dumps(meta, ensure_ascii=False, indent=2)
        lines.append(f"meta:\n```json\n{shown}\n```")
    lines.append(f"{len(decl.rules)} rule{'' if len(decl.rules) == 1 else 's'}")
    return "\n\n".join(lines)


def _subexpressions(e: ast.Expr) -> list[ast.Expr]:
    """The expressions directly inside `e` (none for a name, an event field, a literal)."""
    if isinstance(e, ast.Attribute):
        return [e.obj]
    if isinstance(e, ast.Subscript):
        return [e.obj, e.index]
    if isinstance(e, ast.Call):
        return list(e.args)
    if isinstance(e, ast.ListLit):
        return list(e.items)
    if isinstance(e, ast.MapLit):
        return [part for entry in e.entries for part in entry]
    if isinstance(e, ast.Unary):
        return [e.operand]
    if isinstance(e, ast.Binary):
        return [e.left, e.right]
    if isinstance(e, ast.Conditional):
        return [e.cond, e.then, e.other]
    if isinstance(e, ast.Quantifier):
        return [e.iterable, e.body]
    return []


def _state_outline(decl: ast.StateDecl | ast.HistoryDecl) -> Outline:
    """A state with its child states (and histories) nested under it."""
    if isinstance(decl, ast.HistoryDecl):
        return Outline(decl.name.name, "state", decl.span, decl.name.span, "history")
    detail = " ".join(m.name for m in decl.modifiers) or None
    if decl.title is not None:
        detail = f"{detail or ''} {_title(decl.title)}".strip()
    children = tuple(_state_outline(child) for child in decl.children)
    return Outline(decl.name.name, "state", decl.span, decl.name.span, detail, children)


def _node_detail(node: StateNode, s: Symbols) -> str | None:
    """A state's title, and where it is declared when it is nested (`in Cooking`)."""
    if isinstance(node.decl, ast.HistoryDecl):
        title: str | None = "history"
    else:
        title = _title(node.decl.title)
    if node.parent is None:
        return title
    where = f"in {s.nodes[node.parent].dotted}"
    return f"{title} ({where})" if title else where


def _completes(name: str, s: Symbols) -> str:
    node = s.nodes.get(name)
    return f"raised when {node.dotted if node else name} completes"


def _title(text: ast.Text | None) -> str | None:
    return text.value if text is not None else None


def _contains(span: Span, line: int, column: int) -> bool:
    return (span.line, span.column) <= (line, column) < (span.end_line, span.end_column)


def _inside(inner: Span, outer: Span) -> bool:
    return (inner.line, inner.column) >= (outer.line, outer.column) and (
        inner.end_line,
        inner.end_column,
    ) <= (outer.end_line, outer.end_column)


def allow_comment_edit(source: SourceFile, line: int, code: str) -> tuple[Span, str]:
    """Where and what to insert to silence warning `code` reported on `line`: an allow comment
    on its own line just above, indented like the line (suppress.py honours it there)."""
    text = source.line_text(line)
    indent = text[: len(text) - len(text.lstrip())]
    return Span(line, 1, line, 1), f"{indent}# flowc: allow {code}\n"
