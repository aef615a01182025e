"""The canonical layout of `.flow` source: `format_source(text) -> text`.

The formatter works on the token stream, not on the AST: it re-joins the very tokens the parser
reads, keeping every comment, and decides only the whitespace between them. So it cannot change
what a file means (the tokens, and hence the parse, are the same; `format_source` checks this
before it returns), and syntax it has never seen still formats by the same rules.

What it needs beyond the tokens it takes from the grammar itself, by running Lark's LALR table
over them (no tree is built):
- which tokens are *names* (`type` naming a field is the keyword token TYPE);
- which `-` is a sign (the first token of its rule) and which subtracts;
- where statements start: a statement is a node of any rule named `item` or `*_item` (`item`,
  `state_item`, `migrate_item`, and whatever block rule the grammar grows next);
- where clauses start: a clause is a node that starts with a keyword (`if …`, `do …`,
  `require … else …`), whose own continuation lines are indented a step further.

The layout rules are those of docs/formatting.md; in short: line breaks are the author's, except
that top-level statements, and the brackets and statements of a block broken over lines, get
lines of their own; indentation comes from brackets opened on earlier lines and from
continuation lines; spacing comes from the kinds of the two tokens; trailing comments of a run
of lines are aligned.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from lark import Lark, Token
from lark.parsers.lalr_analysis import Shift

from flowc.compiler.diagnostics import Diagnostic, Severity
from flowc.compiler.lexer import FlowLexer
from flowc.compiler.parse import flow_parser, parse_source

INDENT = "  "
TRAILING_COMMENT_GAP = "  "

_OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
_CLOSERS = frozenset(_OPENERS.values())
#: No space before these.
_TIGHT_BEFORE = frozenset(
    {"COMMA", "SEMICOLON", "COLON", "OPTIONAL", "DOT", "RANGE", "RPAR", "RSQB"}
)
#: No space after these.
_TIGHT_AFTER = frozenset({"LPAR", "LSQB", "DOT", "RANGE"})
#: Tokens that end an operand: a `[` right after one indexes it (or is a generic's argument list).
_OPERAND_ENDS = frozenset({"RPAR", "RSQB"})
#: Tokens after which a `{` opens a block rather than a value.
_WORDS = frozenset({"STRING", "LONG_STRING", "INT", "FLOAT"})
_GAP_PARTS = re.compile(r"#[^\n]*|\n")


class FormatError(Exception):
    """The source does not parse; `diagnostics` says why (the parser's own diagnostics)."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        first = self.diagnostics[0] if self.diagnostics else None
        where = f" at {first.span.line}:{first.span.column}: {first.message}" if first else ""
        more = len(self.diagnostics) - 1
        tail = f" (and {more} more)" if more > 0 else ""
        super().__init__(f"cannot format: the source does not parse{where}{tail}")


class FormatterBug(AssertionError):
    """The formatted text would not read as the same tokens and comments. Never expected; the
    check exists so that a bug in the layout rules can never silently change a flow."""


def format_source(text: str) -> str:
    """`text` in the canonical layout. Raises `FormatError` when it does not parse."""
    if text.startswith("\ufeff"):
        text = text[1:]
    parsed = parse_source(text)
    errors = [d for d in parsed.diagnostics if d.severity is Severity.ERROR]
    if parsed.module is None or errors:
        raise FormatError(errors or parsed.diagnostics)
    return _layout(text, flow_parser())


def _layout(text: str, parser: Lark) -> str:
    """The layout of a text that `parser` accepts (taken as given: the caller checked)."""
    scanner = _scanner(parser)
    tokens = list(scanner.scan(text))
    gaps = _gaps(text, tokens)
    shape = _shape(tokens, parser)
    formatted = _Layout(tokens, gaps, shape).render()
    _check_same_reading(scanner, tokens, gaps, formatted)
    return formatted


# ---- reading -----------------------------------------------------------------------------------


@cache
def _scanner(parser: Lark) -> FlowLexer:
    """A lexer of our own (the parser's is shared, and holds per-parse callbacks)."""
    return FlowLexer(parser.lexer_conf)


@dataclass(frozen=True)
class _Gap:
    """What lies between two tokens: comments, each with the newlines before it, and the
    newlines after the last one."""

    comments: tuple[tuple[int, str], ...]
    newlines: int


_NO_GAP = _Gap((), 0)


def _gaps(text: str, tokens: Sequence[Token]) -> list[_Gap]:
    """One gap before each token, and one after the last (len(tokens) + 1). Between the tokens
    of a file that parses there is only whitespace and comments."""
    starts = [t.start_pos or 0 for t in tokens] + [len(text)]
    ends = [0] + [t.end_pos or 0 for t in tokens]
    gaps: list[_Gap] = []
    for start, end in zip(ends, starts, strict=True):
        if start == end:
            gaps.append(_NO_GAP)
            continue
        gap = text[start:end]
        if "#" not in gap:
            gaps.append(_Gap((), gap.count("\n")) if "\n" in gap else _NO_GAP)
            continue
        comments: list[tuple[int, str]] = []
        newlines = 0
        for part in _GAP_PARTS.finditer(text, start, end):
            if part.group() == "\n":
                newlines += 1
            else:
                comments.append((newlines, part.group().rstrip()))
                newlines = 0
        gaps.append(_Gap(tuple(comments), newlines))
    return gaps


@dataclass
class _Shape:
    """What the grammar says about each token (by index)."""

    is_name: list[bool]
    is_sign: list[bool]
    #: First token of a statement (a node of a rule named `item` or `*_item`).
    starts_item: list[bool]
    #: Index of the first token of the innermost statement holding this token (-1: none).
    item_start: list[int]
    #: Index of the first token of the innermost clause (a node that starts with a keyword,
    #: such as `if …`, `do …`, `require … else …`) that holds this token and starts before it
    #: (-1: none).
    clause_start: list[int]
    #: Index of the matching bracket, for brackets (-1 for other tokens).
    partner: list[int]
    #: The `{` of the blocks of an `if` action (`if g { … } else { … }`), spaced as blocks.
    action_blocks: frozenset[int] = frozenset()


def _is_statement_rule(origin: str) -> bool:
    return origin == "item" or origin.endswith("_item")


#: A parse-table entry: (True, next state, 0, "") to shift; (False, size, passthrough, origin)
#: to reduce by a rule of `size` symbols. A passthrough reduce (one child, and a rule that is
#: neither a statement nor `name`) covers exactly what its child covers, so only the state
#: changes.
_Action = tuple[bool, int, bool, str]


@cache
def _table(parser: Lark) -> tuple[dict[int, dict[str, _Action]], int, int]:
    table = parser.parser.parser.parser.parse_table
    states: dict[int, dict[str, _Action]] = {}
    for state, row in table.states.items():
        entries: dict[str, _Action] = {}
        for symbol, (action, arg) in row.items():
            if action is Shift:
                entries[str(symbol)] = (True, arg, False, "")
            else:
                size, origin = len(arg.expansion), str(arg.origin.name)
                passthrough = size == 1 and origin != "name" and not _is_statement_rule(origin)
                entries[str(symbol)] = (False, size, passthrough, origin)
        states[state] = entries
    return states, table.start_states["start"], table.end_states["start"]


def _shape(tokens: Sequence[Token], parser: Lark) -> _Shape:
    """Run the LALR automaton over tokens the parser has accepted, recording for every reduce
    the tokens it covers and the rule each token is a direct child of."""
    kinds = [t.type for t in tokens]
    tree = _Reductions(kinds, parser)
    tree.run()
    starts_item, item_start = _statement_starts(tree.items, kinds)
    return _Shape(
        tree.is_name,
        tree.is_sign,
        starts_item,
        item_start,
        _clause_starts(tree.clauses, len(kinds)),
        _partners(kinds),
        frozenset(tree.action_blocks),
    )


class _Reductions:
    """The LALR automaton run over a token list, recording what each reduce covers: the
    statements and clauses as token spans, and which tokens are names, signs and the `{` of an
    `if` action's blocks."""

    def __init__(self, kinds: list[str], parser: Lark) -> None:
        self.kinds = kinds
        self.is_name = [False] * len(kinds)
        self.is_sign = [False] * len(kinds)
        self.items: list[tuple[int, int]] = []
        self.clauses: set[tuple[int, int]] = set()
        self.action_blocks: set[int] = set()
        self.keywords = frozenset(_scanner(parser).keywords.values())
        self.states, start_state, self.end_state = _table(parser)
        self.state_stack = [start_state]
        #: Per stack entry: (first token, last token), or None for an empty node; a token's
        #: own entry is marked by a negative "last" of -1 - index.
        self.spans: list[tuple[int, int] | None] = []

    def run(self) -> None:
        states, state_stack = self.states, self.state_stack
        for index, kind in enumerate(self.kinds):
            while True:
                shift, arg, passthrough, origin = states[state_stack[-1]][kind]
                if shift:
                    state_stack.append(arg)
                    self.spans.append((index, -1 - index))
                    break
                if passthrough:
                    state_stack[-1] = states[state_stack[-2]][origin][1]
                else:
                    self.reduce(arg, origin)
        while state_stack[-1] != self.end_state:
            _, arg, passthrough, origin = states[state_stack[-1]]["$END"]
            if passthrough:
                state_stack[-1] = states[state_stack[-2]][origin][1]
            else:
                self.reduce(arg, origin)

    def reduce(self, size: int, origin: str) -> None:
        spans = self.spans
        children = spans[len(spans) - size :] if size else []
        if size:
            del spans[-size:]
            del self.state_stack[-size:]
        first = last = -1
        for position, child in enumerate(children):
            if child is None:
                continue
            if child[1] < 0:  # a token shifted directly into this rule
                index = child[0]
                self._mark_token(index, position, origin)
                child = (index, index)
            if first < 0:
                first = child[0]
            last = child[1]
        node = (first, last) if first >= 0 else None
        if node is not None:
            self._record(node, origin)
        spans.append(node)
        self.state_stack.append(self.states[self.state_stack[-1]][origin][1])

    def _mark_token(self, index: int, position: int, origin: str) -> None:
        """Mark a token that is a direct child of a rule as a name or a sign, if it is one."""
        kind = self.kinds[index]
        if (
            origin == "name"
            or (origin == "atom" and kind == "IF")
            or (origin == "expect_effect" and kind == "NAME")
        ):
            # (`if(c, a, b)` is written as a call is; `expect effect NAME(...)` takes a bare
            # NAME)
            self.is_name[index] = True
        elif position == 0 and kind == "MINUS":
            self.is_sign[index] = True

    def _record(self, node: tuple[int, int], origin: str) -> None:
        """Keep a reduced node that is a statement, a clause or an `if` action's block."""
        first, last = node
        if origin == "action_block":
            self.action_blocks.add(first)
        if _is_statement_rule(origin):
            self.items.append(node)
        elif (
            last > first
            and self.kinds[first] in self.keywords
            and not self.is_name[first]
            and not origin.startswith("__")  # Lark's helpers for `x*`: lists, not clauses
        ):
            self.clauses.add(node)


def _statement_starts(
    items: list[tuple[int, int]], kinds: list[str]
) -> tuple[list[bool], list[int]]:
    """Whether each token starts a statement, and the first token of the innermost statement
    holding each token (-1: none)."""
    count = len(kinds)
    starts_item = [False] * count
    item_start = [-1] * count
    # Outer statements first, so that inner ones overwrite them.
    for first, last in sorted(items, key=lambda span: (span[0], -span[1])):
        starts_item[first] = True
        item_start[first : last + 1] = [first] * (last + 1 - first)
    for index in range(1, count):
        # `history H -> X`: the parser reads `-> X` as a direct rule, which the AST builder
        # makes the history's default; keep it on the history's line.
        previous = item_start[index - 1]
        if (
            starts_item[index]
            and kinds[index] == "ARROW"
            and previous >= 0
            and kinds[previous] == "HISTORY"
        ):
            starts_item[index] = False
            following = index
            while following < count and item_start[following] == index:
                item_start[following] = previous
                following += 1
    return starts_item, item_start


def _clause_starts(clauses: set[tuple[int, int]], count: int) -> list[int]:
    """The first token of the innermost clause holding each token and starting before it."""
    clause_start = [-1] * count
    for first, last in sorted(clauses, key=lambda span: (span[0], -span[1])):
        clause_start[first + 1 : last + 1] = [first] * (last - first)
    return clause_start


def _partners(kinds: list[str]) -> list[int]:
    """The index of the matching bracket of each bracket (-1 for other tokens)."""
    partner = [-1] * len(kinds)
    open_stack: list[int] = []
    for index, kind in enumerate(kinds):
        if kind in _OPENERS:
            open_stack.append(index)
        elif kind in _CLOSERS and open_stack:
            opener = open_stack.pop()
            partner[opener], partner[index] = index, opener
    return partner


# ---- writing -----------------------------------------------------------------------------------


class _Layout:
    def __init__(self, tokens: Sequence[Token], gaps: Sequence[_Gap], shape: _Shape) -> None:
        self.tokens = tokens
        self.gaps = gaps
        self.shape = shape
        self.lines: list[str] = []
        self.line_indent: list[int] = []
        #: Whether each output line's last token (comments aside) opens a bracket.
        self.line_opens: list[bool] = []
        #: The comment after the code of each output line, if any.
        self.trailing: list[str | None] = []
        #: Whether each output line is a comment on its own line (or blank).
        self.code_line: list[bool] = []
        #: Output line of each token.
        self.token_line: list[int] = []
        self.broken = self._broken_brackets()

    def _broken_brackets(self) -> set[int]:
        """Openers whose contents the author broke over lines, at the bracket's own level: a
        broken `{…}` in `f(x, {…})` leaves the parentheses alone."""
        broken: set[int] = set()
        stack: list[int] = []
        for index, token in enumerate(self.tokens):
            gap = self.gaps[index]
            if stack and (gap.newlines or gap.comments):
                broken.add(stack[-1])
            if token.type in _OPENERS:
                stack.append(index)
            elif token.type in _CLOSERS and stack:
                stack.pop()
        return broken

    def render(self) -> str:
        stack: list[int] = []  # the brackets open before the current token
        for index, token in enumerate(self.tokens):
            self._place(index, stack)
            self.token_line.append(len(self.lines) - 1)
            if token.type in _OPENERS:
                stack.append(index)
            elif token.type in _CLOSERS and stack:
                stack.pop()
        self._comments(self.gaps[-1], None, stack)
        self._align_trailing_comments()
        return "\n".join(self.lines) + "\n" if self.lines else ""

    def _align_trailing_comments(self) -> None:
        """Trailing comments of a run of code lines (same indentation, no blank or comment line
        between) start in one column, two spaces after the longest code among them."""
        run: list[int] = []
        for number in [*range(len(self.lines)), -1]:
            if run and (
                number == -1
                or not self.code_line[number]
                or self.line_indent[number] != self.line_indent[run[0]]
            ):
                commented = [n for n in run if self.trailing[n] is not None]
                width = max((_width(self.lines[n]) for n in commented), default=0)
                for n in commented:
                    pad = width - _width(self.lines[n])
                    self.lines[n] += " " * pad + TRAILING_COMMENT_GAP + (self.trailing[n] or "")
                run = []
            if number != -1 and self.code_line[number]:
                run.append(number)

    def _place(self, index: int, stack: list[int]) -> None:
        """Write a token (and the comments before it) on the current line or a new one."""
        newlines = self._comments(self.gaps[index], index, stack)
        token = self.tokens[index]
        opens = token.type in _OPENERS
        if not self.lines:
            self._new_line(0, token.value, opens=opens)
        elif newlines or self._forced_break(index, stack):
            closes = token.type in _CLOSERS
            indent = self._indent(index, stack)
            self._new_line(indent, token.value, opens=opens, blank=newlines > 1 and not closes)
        else:
            self.lines[-1] += self._space(index) + token.value
            self.line_opens[-1] = opens

    def _comments(self, gap: _Gap, index: int | None, stack: list[int]) -> int:
        """Write the comments of a gap; return the newlines between the last one (or the
        previous token) and the next token."""
        for newlines, comment in gap.comments:
            if newlines == 0 and self.lines:
                self.trailing[-1] = comment
            else:
                indent = self._comment_indent(index, stack)
                self._new_line(indent, comment, opens=False, blank=newlines > 1, code=False)
        return gap.newlines

    def _new_line(
        self, indent: int, text: str, *, opens: bool, blank: bool = False, code: bool = True
    ) -> None:
        if blank and self.lines and not self.line_opens[-1]:
            self._append("", 0, opens=False, code=False)
        self._append(INDENT * indent + text, indent, opens=opens, code=code)

    def _append(self, text: str, indent: int, *, opens: bool, code: bool) -> None:
        self.lines.append(text)
        self.line_indent.append(indent)
        self.line_opens.append(opens)
        self.trailing.append(None)
        self.code_line.append(code)

    def _forced_break(self, index: int, stack: list[int]) -> bool:
        if self.tokens[index].type in _CLOSERS:
            return bool(stack) and stack[-1] in self.broken
        if (index - 1) in self.broken:  # right after a broken bracket's opener
            return True
        if self.shape.starts_item[index]:
            return not stack or stack[-1] in self.broken
        return False

    def _indent(self, index: int, stack: list[int]) -> int:
        if not stack:
            opener, base = -1, 0
        else:
            opener = stack[-1]
            base = self.line_indent[self.token_line[opener]]
            if self.tokens[index].type in _CLOSERS:
                return base
            base += 1
        start = self.shape.item_start[index]
        if not opener < start < index:
            return base  # the line starts a statement, or is not in one at this level
        clause = self.shape.clause_start[index]
        if start < clause and self.token_line[clause] > self.token_line[start]:
            return base + 2  # it continues a clause that itself began on a continuation line
        return base + 1

    def _comment_indent(self, index: int | None, stack: list[int]) -> int:
        """A comment on its own line is indented like the line it precedes, or before a
        closer like the contents the closer ends."""
        if index is None:
            return 0
        if self.tokens[index].type in _CLOSERS and stack:
            return self.line_indent[self.token_line[stack[-1]]] + 1
        return self._indent(index, stack)

    def _space(self, index: int) -> str:
        """The space between a token and the one before it on the same line."""
        kind, before = self.tokens[index].type, self.tokens[index - 1].type
        if before in _TIGHT_AFTER or kind in _TIGHT_BEFORE or self.shape.is_sign[index - 1]:
            return ""
        if kind == "LPAR" and self.shape.is_name[index - 1]:
            return ""  # a call, an event's parameters, a range type
        if kind == "LSQB" and (self.shape.is_name[index - 1] or before in _OPERAND_ENDS):
            return ""  # an index, a generic type
        if kind == "RBRACE" and before == "LBRACE":
            return ""
        if before == "LBRACE" and not self._is_block(index - 1):
            return ""
        if kind == "RBRACE" and not self._is_block(self.shape.partner[index]):
            return ""
        return " "

    def _is_block(self, opener: int) -> bool:
        """A `{` after a word (`enum Verdict {`, `state A "Title" {`, `meta {`, `from 1 {`) opens a
        block, written `{ a, b }` on one line; after an operator or a comma it is a value,
        `{"k": v}`, as in Python."""
        if opener == 0 or opener in self.shape.action_blocks:
            return True
        previous = opener - 1
        return (
            self.shape.is_name[previous]
            or self.shape.starts_item[previous]
            or self.tokens[previous].type in _WORDS
        )


def _width(line: str) -> int:
    """Columns of a line's last physical line (a triple-quoted string may span several)."""
    return len(line) - (line.rfind("\n") + 1)


# ---- the guarantee -----------------------------------------------------------------------------


def _check_same_reading(
    scanner: FlowLexer, tokens: Sequence[Token], gaps: Sequence[_Gap], formatted: str
) -> None:
    again = list(scanner.scan(formatted))
    if [(t.type, t.value) for t in again] != [(t.type, t.value) for t in tokens]:
        raise FormatterBug("formatting changed the tokens of the file")
    comments = [c for gap in gaps for _, c in gap.comments]
    if [c for gap in _gaps(formatted, again) for _, c in gap.comments] != comments:
        raise FormatterBug("formatting lost or changed a comment")
