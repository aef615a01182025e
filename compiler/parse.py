"""Source text -> Lark parse tree -> AST, with syntax diagnostics.

Errors are collected, not raised: the LALR parser resumes after a bad token so one run reports
every syntax error of a file (at most one a line, so a single slip does not cascade), and any
input at all (binary garbage, 10,000 nested parentheses, a 5 MB file) ends in diagnostics,
never a traceback.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import PatternStr
from lark.parse_tree_builder import ExpandSingleChild
from lark.parsers.lalr_analysis import Shift
from lark.parsers.lalr_interactive_parser import InteractiveParser

from flowc.compiler import ast, fastparse
from flowc.compiler.diagnostics import CODES, Diagnostic
from flowc.compiler.fastparse import is_hex as _is_hex
from flowc.compiler.fastparse import unescape
from flowc.compiler.lexer import FlowLexer, NestingTooDeep
from flowc.compiler.source import Span

#: Brackets nested deeper than this are refused (E005); nothing real comes close.
MAX_NESTING = 100
#: Expressions deeper than this (e.g. `1+1+...+1` ten thousand times) are refused (E005).
MAX_EXPR_DEPTH = 200
#: Integers must survive JSON consumers with 64-bit integers.
_MAX_INT = 2**63 - 1
_MAX_INT_DIGITS = len(str(_MAX_INT))
#: After this many syntax errors a file is not worth reading further (E006).
MAX_SYNTAX_ERRORS = 25
#: Tokens that fit nowhere, reported or not (one error is reported a line): past this many the
#: file is not read further (E006), so a line of 100,000 stray `{` costs no more than this.
MAX_MISPLACED_TOKENS = 1000

_REGEX_TERMINALS = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a string",
    "LONG_STRING": 'a """triple-quoted""" string',
    "DURATION": "a duration such as `30s`, `10m` or `14d`",
    "COMPARE": "a comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`)",
    "MUL_OP": "`*`, `/` or `%`",
    "$END": "end of file",
}

#: The most children a `join N` may wait for (bounds what a written number can ask).
_MAX_JOIN = 1_000_000
_DURATION_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


_SOFT_KEYWORDS = frozenset(
    [
        "FLOW",
        "VERSION",
        "ENUM",
        "TYPE",
        "CONTEXT",
        "INITIAL",
        "FINAL",
        "CHOICE",
        "REJECT",
        "MESSAGE",
        "JOURNAL",
        "TEMPLATE",
        "REQUIRE",
        "BACK",
        "MIGRATE",
        "FROM",
        "FIELD",
        "DROP",
        "INVARIANT",
        "TEST",
        "GIVEN",
        "SEND",
        "GOTO",
        "ADVANCE",
        "EXPECT",
        "FORCE",
        "WITH",
        "UNHANDLED",
        "REENTER",
        "PARALLEL",
        "HISTORY",
        "EFFECT",
        "EMIT",
        "RAISE",
        "ELIF",
        "INPUT",
        "HIDDEN",
        "NO",
        "INVOKE",
        "TO",
        "JOIN",
        "FORWARD",
        "FINALIZE",
        "INTO",
    ]
)
_STATEMENT_STARTS = frozenset({"STATE", "EVENT", "CONTEXT", "ENTRY", "EXIT", "META"})
_EXPRESSION_STARTS = frozenset({"INT", "FLOAT", "STRING", "TRUE", "FALSE", "NONE", "LSQB"})


@cache
def flow_parser() -> Lark:
    grammar = resources.files("flowc.grammar").joinpath("flow.lark").read_text(encoding="utf-8")
    return Lark(
        grammar,
        parser="lalr",
        lexer=FlowLexer,
        strict=True,
        maybe_placeholders=True,
        transformer=_BUILDER,
    )


def _lexer(parser: Lark) -> FlowLexer:
    lexer = parser.parser.lexer
    assert isinstance(lexer, FlowLexer)
    return lexer


class _TooManyErrors(Exception):
    def __init__(self, span: Span, message: str = "") -> None:
        super().__init__("too many syntax errors")
        self.span = span
        self.message = message or f"stopped after {MAX_SYNTAX_ERRORS} syntax errors"


def describe_terminal(name: str) -> str:
    """A terminal as a reader knows it: `->` rather than ARROW, 'a name' rather than NAME."""
    if name in _REGEX_TERMINALS:
        return _REGEX_TERMINALS[name]
    try:
        pattern = flow_parser().get_terminal(name).pattern
    except KeyError:
        return name.lower()
    if isinstance(pattern, PatternStr):
        return f"`{pattern.value}`"
    return name.lower()


def expected_in_words(expected: set[str] | frozenset[str]) -> str:
    if "NAME" in expected and expected >= _SOFT_KEYWORDS:
        # Every soft keyword is listed only because a name may be one: say "a name" once.
        expected = frozenset(expected) - _SOFT_KEYWORDS
    if len(expected) > 8 and {"COMPARE", "ADD_OP"} & expected:
        follow = [describe_terminal(t) for t in ("ARROW", "DO", "ELSE") if t in expected]
        return "an operator" + (" or " + " or ".join(follow) if follow else "")
    if expected >= _EXPRESSION_STARTS:
        # `event` and `state` start expressions too (`event.x`): not a new statement here.
        return "an expression"
    if len(expected) > 8 and len(expected & _STATEMENT_STARTS) >= 2:
        starts = sorted(describe_terminal(t) for t in expected & _STATEMENT_STARTS)
        return "a new statement (" + ", ".join(starts) + ", …)"
    words = sorted({describe_terminal(t) for t in expected}, key=lambda w: (w.startswith("`"), w))
    if not words:
        return "nothing more here"
    if len(words) > 8:
        words = [*words[:7], "…"]
        return "one of " + ", ".join(words)
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _token_span(token: Token) -> Span:
    line = token.line or 1
    column = token.column or 1
    end_line = token.end_line or line
    end_column = token.end_column or column + 1
    return Span(line, column, end_line, end_column)


def _describe_token(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    text = str(token)
    if len(text) > 30:
        text = text[:27] + "..."
    if token.type == "NAME":
        return f"name `{text}`"
    return f"`{text}`"


@dataclass
class ParseResult:
    module: ast.Module | None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def parse_source(text: str, file: str = "<input>", *, fast_path: bool = True) -> ParseResult:
    """Parse text into an AST. `module` is None only when the file could not be read at all.
    With `fast_path` (the default) a well-formed file in the language `fastparse` knows skips Lark
    and the grammar's load; anything else is parsed, and reported on, by Lark below."""
    quick = fastparse.parse_module(text) if fast_path else None
    if quick is not None:
        return ParseResult(quick)
    parser = flow_parser()
    with _PARSE_LOCK:
        fast = _fast_parse(parser, text, file)
    if fast is not None:
        return fast
    recovery = _Recovery(text, file)
    try:
        with _PARSE_LOCK:
            _BUILDER.begin(recovery.report)
            _lexer(parser).on_bad_character = recovery.on_bad_character
            module = parser.parse(text, on_error=recovery.on_error)
    except _TooManyErrors as too_many:
        recovery.report("E006", too_many.message, too_many.span)
        return ParseResult(None, _sorted(recovery.diagnostics))
    except NestingTooDeep as too_deep:
        recovery.report(
            "E005",
            f"brackets nested more than {MAX_NESTING} deep",
            _token_span(too_deep.token),
            "split the expression or the value into smaller parts",
        )
        return ParseResult(None, recovery.diagnostics)
    except UnexpectedToken as error:
        recovery.on_fatal_token(error)
        return ParseResult(None, _sorted(recovery.diagnostics))
    except (UnexpectedCharacters, UnexpectedEOF) as error:
        line = getattr(error, "line", 1) or 1
        column = getattr(error, "column", 1) or 1
        recovery.report(
            "E006", f"stopped after {MAX_SYNTAX_ERRORS} syntax errors", Span.point(line, column)
        )
        return ParseResult(None, _sorted(recovery.diagnostics))
    assert isinstance(module, ast.Module)
    # A tree built around skipped tokens is only good for more confusion: the diagnostics say so.
    return ParseResult(module, _sorted(recovery.diagnostics))


class _Recovery:
    """Lark's error recovery for one parse: reports each syntax error (at most one per line),
    repairs or drops the token that does not fit, and stops when there are too many."""

    def __init__(self, text: str, file: str) -> None:
        self.text = text
        self.file = file
        self.diagnostics: list[Diagnostic] = []
        self.lines_reported: set[int] = set()
        #: tokens that fit nowhere so far
        self.misplaced = 0
        #: the last token reported was dropped (it fit nowhere): the parser may be stuck
        #: mid-statement
        self.dropping = False
        #: `{` dropped as out of place, whose `}` must be dropped too
        self.open_dropped = 0

    def report(self, code: str, message: str, span: Span, help: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code, message, span, self.file, help, CODES[code][0]))

    def report_once(self, code: str, message: str, span: Span, help: str | None = None) -> None:
        """Report, unless this line already has an error (one slip often confuses the rest)."""
        if span.line not in self.lines_reported:
            self.lines_reported.add(span.line)
            self.report(code, message, span, help)

    def on_error(self, error: UnexpectedInput) -> bool:
        """Lark's `on_error`: True to go on parsing, False to give up."""
        if len(self.lines_reported) >= MAX_SYNTAX_ERRORS:
            return False
        if isinstance(error, UnexpectedCharacters):
            pos = error.pos_in_stream or 0
            char = self.text[pos] if pos < len(self.text) else ""
            self.report_bad_character(char, error.line, error.column)
            return True
        if isinstance(error, UnexpectedToken) and error.token.type != "$END":
            self.on_misplaced_token(error)
            return True
        return False

    def on_bad_character(self, char: str, line: int, column: int) -> None:
        """The lexer's hook for a character that starts no token."""
        if len(self.lines_reported) >= MAX_SYNTAX_ERRORS:
            raise _TooManyErrors(Span.point(line, column))
        self.report_bad_character(char, line, column)

    def report_bad_character(self, char: str, line: int, column: int) -> None:
        shown = repr(char) if not char.isprintable() or char == " " else f"`{char}`"
        self.report_once(
            "E002", f"unexpected character {shown}", Span.point(line, column), _char_help(char)
        )

    def on_misplaced_token(self, error: UnexpectedToken) -> None:
        token = error.token
        span = _token_span(token)
        self.misplaced += 1
        if self.misplaced > MAX_MISPLACED_TOKENS:
            raise _TooManyErrors(
                span, f"stopped after {MAX_MISPLACED_TOKENS} tokens that fit nowhere"
            )
        # A placeholder that makes the token fit means something is missing before it; when
        # none does, the token itself is out of place.
        repaired = _repair(error.interactive_parser, token)
        if repaired:
            self.dropping = False
        elif self._already_reported(error.interactive_parser, token):
            return
        line_end = _end_of_previous_code(self.text, token.start_pos or 0, token.line or 1)
        if repaired and line_end is not None and line_end[0] < span.line:
            # Something is missing at the end of an earlier line: point there, not at the
            # innocent first token of the next statement.
            self.report_once(
                "E003",
                f"expected {expected_in_words(error.expected)} at the end of this line, "
                f"found {_describe_token(token)} on line {token.line}",
                Span.point(*line_end),
                _token_help(token, error.expected),
            )
            return
        self.report_once(
            "E003",
            f"unexpected {_describe_token(token)}; expected {expected_in_words(error.expected)}",
            span,
            _token_help(token, error.expected),
        )

    def _already_reported(self, parser: InteractiveParser, token: Token) -> bool:
        """Drop `token`, which fits nowhere, and say whether that is part of a slip already
        reported: the `}` of a dropped `{`, or the first token of the next statement after
        a broken one. Otherwise the parser is now dropping tokens."""
        if token.type == "LBRACE":
            self.open_dropped += 1  # its `}` closes nothing the parser knows of
        if token.type == "RBRACE" and self.open_dropped:
            self.open_dropped -= 1
            self.dropping = True
            return True
        if _resync(parser, token):
            # The parser was stuck inside a broken statement and this token starts the next
            # one: it is not a new slip when the tokens before it were already reported.
            was_dropping, self.dropping = self.dropping, False
            return was_dropping
        self.dropping = True
        return False

    def on_fatal_token(self, error: UnexpectedToken) -> None:
        """Report the token Lark gave up on: the end of the file, or one past the limit."""
        if error.token.type == "$END":
            last_line = self.text.count("\n") + 1
            end = _end_of_previous_code(self.text, len(self.text), last_line) or (1, 1)
            if "RBRACE" in error.expected:
                message = "unexpected end of file: a block is not closed"
                help: str | None = "add the missing `}`"
            else:
                message = f"unexpected end of file; expected {expected_in_words(error.expected)}"
                help = None
            self.report("E004", message, Span.point(*end), help)
        elif len(self.lines_reported) >= MAX_SYNTAX_ERRORS:
            self.report(
                "E006",
                f"stopped after {MAX_SYNTAX_ERRORS} syntax errors",
                _token_span(error.token),
            )
        else:  # pragma: no cover - on_error accepts every other token
            self.report(
                "E003", f"unexpected {_describe_token(error.token)}", _token_span(error.token)
            )


class _Reduce:
    """One grammar rule as the fast driver applies it."""

    __slots__ = ("callback", "origin", "passthrough", "size")

    def __init__(self, size: int, callback: Callable[[list[Any]], Any], origin: str) -> None:
        self.size = size
        self.callback = callback
        self.origin = origin
        #: A one-child `?rule` alternative: Lark's callback hands the child back unchanged.
        self.passthrough = size == 1 and isinstance(callback, ExpandSingleChild)


@dataclass(frozen=True)
class _Table:
    states: dict[int, dict[str, tuple[bool, Any]]]
    start: int
    end: int


@cache
def _fast_table(parser: Lark) -> _Table:
    """Lark's own LALR table, with each reduce's size, callback and result symbol looked up
    once: Lark's loop hashes and compares grammar objects and tokens on every reduce, which is
    most of its per-token cost."""
    inner = parser.parser.parser.parser
    table = inner.parse_table
    callbacks = inner.callbacks
    reduces: dict[int, _Reduce] = {}
    states: dict[int, dict[str, tuple[bool, Any]]] = {}
    for state, row in table.states.items():
        out: dict[str, tuple[bool, Any]] = {}
        for symbol, (action, arg) in row.items():
            if action is Shift:
                out[str(symbol)] = (True, arg)
            else:
                found = reduces.get(id(arg))
                if found is None:
                    found = _Reduce(len(arg.expansion), callbacks[arg], str(arg.origin.name))
                    reduces[id(arg)] = found
                out[str(symbol)] = (False, found)
        states[state] = out
    return _Table(states, table.start_states["start"], table.end_states["start"])


def _fast_parse(parser: Lark, text: str, file: str) -> ParseResult | None:
    """Parse a file without syntax errors with a tight LALR loop over Lark's table and Lark's
    callbacks (so the same AST, node for node). None at the first sign of trouble (a syntax
    error, a bad character, brackets too deep): the caller then parses again with Lark's own
    parser, whose error recovery reports everything. Callers hold `_PARSE_LOCK`."""
    table = _fast_table(parser)
    states = table.states
    diagnostics: list[Diagnostic] = []

    def report(code: str, message: str, span: Span, help: str | None = None) -> None:
        diagnostics.append(Diagnostic(code, message, span, file, help, CODES[code][0]))

    def bad_character(char: str, line: int, column: int) -> None:
        raise _Abandon

    lexer = _lexer(parser)
    _BUILDER.begin(report)
    lexer.on_bad_character = bad_character
    state_stack = [table.start]
    value_stack: list[Any] = []
    try:
        for token in lexer.scan(text):
            kind = token.type
            while True:
                entry = states[state_stack[-1]].get(kind)
                if entry is None:
                    return None
                if entry[0]:
                    state_stack.append(entry[1])
                    value_stack.append(token)
                    break
                rule = entry[1]
                if rule.passthrough:  # most reduces: `?expr: or_test` and the like
                    state_stack[-1] = states[state_stack[-2]][rule.origin][1]
                    continue
                _reduce(rule, state_stack, value_stack, states)
        while True:
            entry = states[state_stack[-1]].get("$END")
            if entry is None or entry[0]:
                return None
            _reduce(entry[1], state_stack, value_stack, states)
            if state_stack[-1] == table.end:
                break
    except (_Abandon, NestingTooDeep):
        return None
    module = value_stack[-1]
    assert isinstance(module, ast.Module)
    return ParseResult(module, _sorted(diagnostics))


def _reduce(
    rule: _Reduce,
    state_stack: list[int],
    value_stack: list[Any],
    states: dict[int, dict[str, tuple[bool, Any]]],
) -> None:
    size = rule.size
    if size:
        children = value_stack[-size:]
        del state_stack[-size:]
        del value_stack[-size:]
    else:
        children = []
    value_stack.append(rule.callback(children))
    state_stack.append(states[state_stack[-1]][rule.origin][1])


class _Abandon(Exception):
    """The fast parse met something only the full parser reports well."""


#: Tokens the parser may pretend it saw, so that one mistake does not derail the rest of the
#: statement (and report a second, spurious error). Order is preference among repairs that
#: insert as many tokens.
_INSERTABLE = {
    "ARROW": "->",
    "NAME": "_",
    "RPAR": ")",
    "RSQB": "]",
    "RBRACE": "}",
    "COMMA": ",",
    "INT": "0",
    # Tokens a statement cannot do without: were they never inserted, the parser would wait for
    # one to the end of the file and report every later line.
    "DURATION": "0s",
    "STRING": '""',
    "COLON": ":",
    "LBRACE": "{",
}


#: The most placeholders one repair may insert (`if` before `}` needs `_ -> _`).
_MAX_INSERTED = 3


def _repair(parser: InteractiveParser | None, token: Token) -> bool:
    """Insert up to `_MAX_INSERTED` placeholder tokens before `token` so that it fits, fewest
    first; feed them and the token to `parser` and return True, or leave `parser` alone (the
    token is then skipped)."""
    if parser is None:
        return False
    states = _fast_table(flow_parser()).states
    # Trials run on the LALR table with a copy of the state stack only: no values are copied
    # and no reduce callbacks run, so a trial costs a few list operations and reports nothing.
    # Breadth first over prefixes the table accepts token by token: a prefix whose first
    # placeholder is refused is never extended, so the search stays small.
    level: list[tuple[list[int], tuple[str, ...]]] = [(list(parser.parser_state.state_stack), ())]
    for _ in range(_MAX_INSERTED):
        following: list[tuple[list[int], tuple[str, ...]]] = []
        for stack, prefix in level:
            for kind in _INSERTABLE:
                if kind not in states[stack[-1]]:
                    continue
                trial = _shifted(states, stack, kind)
                if trial is None:
                    continue
                # An inserted `{` right before a real `}` would pair with it (an empty map) and
                # steal the `}` that closes the enclosing block.
                paired = kind == "LBRACE" and token.type == "RBRACE"
                if not paired and _shifted(states, trial, token.type) is not None:
                    for done in (*prefix, kind):
                        parser.feed_token(Token.new_borrow_pos(done, _INSERTABLE[done], token))
                    parser.feed_token(token)
                    return True
                following.append((trial, (*prefix, kind)))
        level = following
    return False


#: Tokens that begin a declaration or a state's statement (or close a block): where a parser stuck
#: in a broken statement may start again.
_RESYNC_TOKENS = frozenset(
    {
        "FLOW", "VERSION", "ENUM", "TYPE", "CONTEXT", "EVENT", "STATE", "INITIAL", "FINAL",
        "CHOICE", "ON", "AFTER", "ENTRY", "EXIT", "META", "MESSAGE", "JOURNAL", "TEMPLATE",
        "MIGRATE", "INVARIANT", "TEST", "UNHANDLED", "EFFECT", "RBRACE",
        "PARALLEL", "HISTORY", "ALWAYS",
    }
)  # fmt: skip


def _resync(parser: InteractiveParser | None, token: Token) -> bool:
    """Panic-mode recovery: when `token` starts a statement but fits nowhere, drop the parser's
    most recent states (the statement it was stuck in) until the token can be shifted, and feed
    it. The dropped values are discarded; the file has errors, so its tree is never lowered."""
    if parser is None or token.type not in _RESYNC_TOKENS:
        return False
    state = parser.parser_state
    states = state.parse_conf.parse_table.states
    stack = state.state_stack
    values = state.value_stack
    for depth in range(len(stack) - 1, 0, -1):
        popped = values[depth - 1] if depth - 1 < len(values) else None
        if isinstance(popped, Token) and popped.type == "RBRACE":
            return False  # a block already closed stays closed
        if _shifted(states, stack[:depth], token.type) is not None:
            del stack[depth:]
            del state.value_stack[depth - 1 :]
            parser.feed_token(token)
            return True
    return False


def _shifted(
    states: dict[int, dict[str, tuple[bool, Any]]], stack: list[int], kind: str
) -> list[int] | None:
    """The state stack after the LALR table shifts a `kind` token onto a copy of `stack` (with
    the reduces before it), or None if the table refuses it."""
    stack = list(stack)
    while True:
        entry = states[stack[-1]].get(kind)
        if entry is None:
            return None
        if entry[0]:
            stack.append(entry[1])
            return stack
        rule: _Reduce = entry[1]
        if rule.size:
            del stack[-rule.size :]
        goto = states[stack[-1]].get(rule.origin)
        if goto is None:
            return None
        stack.append(goto[1])


def _end_of_previous_code(text: str, offset: int, line_no: int) -> tuple[int, int] | None:
    """(line, column) just after the last code character before `offset` (on line `line_no`),
    skipping blank lines and `#` comments; None at the start of the file."""
    line_start = text.rfind("\n", 0, offset) + 1
    # The token's own line: code before it on the same line means nothing is "missing" earlier.
    if text[line_start:offset].strip():
        return (line_no, offset - line_start + 1)
    end = line_start - 1
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        line_no -= 1
        code = _strip_comment(text[start:end]).rstrip()
        if code:
            return (line_no, len(code) + 1)
        end = start - 1
    return None


def _strip_comment(line: str) -> str:
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line


def _sorted(diags: list[Diagnostic]) -> list[Diagnostic]:
    return sorted(diags, key=Diagnostic.sort_key)


def _char_help(char: str) -> str | None:
    if char in "“”‘’":
        return "use plain quotes (\" or ') instead of typographic ones"
    if char == "\t":
        return None
    if not char.isprintable():
        return "the file contains a control character; is it really a .flow file?"
    if char in "&|":
        return "write `and` / `or`"
    if char == "!":
        return "write `not` for negation; `!=` compares"
    return None


#: A reserved word's usual stand-in, for the help of a reserved word written as a name.
_RENAMES = {"state": "status", "event": "kind", "in": "inside", "on": "enabled", "meta": "info"}


def _token_help(token: Token, expected: set[str] | frozenset[str]) -> str | None:
    value = str(token)
    if "NAME" in expected and value.isidentifier() and token.type not in {"NAME", *_SOFT_KEYWORDS}:
        where = "a payload field may be `state`; " if value == "state" else ""
        other = _RENAMES.get(value, value + "_")
        return f"`{value}` is a reserved word, not a name here: {where}rename it (`{other}`)"
    if token.type == "NAME" and "SEMICOLON" in expected:
        return "separate actions with `;`: a line break does not continue a `do` list"
    if value == "=" and "COMPARE" in expected:
        return "use `==` to compare; `=` assigns in a `do` clause"
    if token.type == "ARROW" and set(expected) == {"NAME"}:
        # Only a plain NAME, not the soft keywords a `name` may be: the unit of `after EXPR UNIT`.
        return (
            "a computed delay ends with its unit: `after backoff_ms ms` (`ms`, `s`, `m`, `h`, `d`)"
        )
    if token.type == "ARROW" and "NAME" in expected:
        return "an event name goes between `on` and `->`"
    if "ARROW" in expected and token.type in {"NAME", "STRING"}:
        return "a transition reads `on EVENT [if GUARD] -> TARGET`"
    if "DURATION" in expected and token.type in {"NAME", "INT"}:
        return (
            "`after` takes a duration: a number with its unit right after it (`30s`), or an "
            "expression and its unit (`after backoff_ms ms`)"
        )
    if token.type in {"AFTER", "ENTRY", "EXIT", "META"} and "STATE" in expected:
        return f"`{value}` belongs inside a state's `{{ … }}`"
    if value in {"&&", "||"}:
        return "write `and` / `or`"
    return None


def _edge_span(item: Any, last: bool) -> Span | None:
    """The span of the first (or last) positioned thing inside a callback's children, if any;
    scanning from that end, so a long list is not walked for one span."""
    if isinstance(item, Token):
        return _token_span(item)
    span = getattr(item, "span", None)
    if isinstance(span, Span):
        return span
    if isinstance(item, list | tuple):
        for part in reversed(item) if last else item:
            found = _edge_span(part, last)
            if found is not None:
                return found
    return None


def _bounds(item: Any) -> tuple[Span, Span] | None:
    """The first and last positioned thing inside a callback's children, if any."""
    first = _edge_span(item, last=False)
    if first is None:
        return None
    last = _edge_span(item, last=True)
    assert last is not None
    return first, last


def _span(children: Any) -> Span:
    """A node's span, from its children: the grammar keeps every keyword that starts a
    statement, so the first child marks the start. Closing punctuation is not kept, so the span
    ends at the last token or node inside."""
    found = _bounds(children)
    if found is None:
        return Span(1, 1, 1, 1)
    return found[0].to(found[1])


Report = Callable[..., None]


def _no_report(*args: Any) -> None:
    raise AssertionError("parser used outside parse_source")


class _AstBuilder(Transformer):  # type: ignore[type-arg]
    """Builds the AST bottom-up, inside the parser's reduce actions (no parse tree is built, and
    nothing recurses, so pathological nesting cannot overflow the stack).

    One instance is bound to the cached parser; `begin` resets it for each parse.
    """

    def __init__(self) -> None:
        super().__init__()
        self.report: Report = _no_report
        self.depth: dict[int, int] = {}
        #: int literals of 2**63 not (yet) under a minus sign, by span: E209 unless negated
        self.unsigned_min: dict[Span, Token] = {}

    def begin(self, report: Report) -> None:
        self.report = report
        self.depth = {}
        self.unsigned_min = {}

    # ---- leaves ------------------------------------------------------------------------
    def name(self, children: list[Token]) -> ast.Ident:
        token = children[0]
        return ast.Ident(str(token), _token_span(token))

    def field_name(self, children: list[Any]) -> ast.Ident:
        found = children[0]
        return found if isinstance(found, ast.Ident) else ast.Ident(str(found), _token_span(found))

    def text(self, children: list[Token]) -> ast.Text:
        token = children[0]
        span = _token_span(token)
        raw = str(token)
        if token.type == "LONG_STRING":
            body = raw[3:-3]
            if body.startswith("\r\n"):
                body = body[2:]
            elif body.startswith("\n"):
                body = body[1:]
            return ast.Text(body, span)
        return ast.Text(self._string(token), span)

    def _string(self, token: Token) -> str:
        value, bad = unescape(str(token)[1:-1])
        if bad is not None:
            span = _token_span(token)
            col = span.column + 1 + bad
            escape = str(token)[1 + bad : 3 + bad]
            message = f"unknown escape `{escape}` in string"
            width = 2
            help = "known escapes: \\n \\t \\r \\0 \\\\ \\\" \\' \\uXXXX"
            if escape == "\\u" and _is_hex(str(token)[3 + bad : 7 + bad]):
                message = f"`{str(token)[1 + bad : 7 + bad]}` is half of a UTF-16 surrogate pair"
                width = 6
                help = "write the character itself, or both halves (`\\ud83d\\ude00`)"
            self.report("E007", message, Span(span.line, col, span.line, col + width), help)
        return value

    # ---- declarations ------------------------------------------------------------------
    def start(self, children: list[Any]) -> ast.Module:
        for token in self.unsigned_min.values():
            self.too_large(token)
        self.unsigned_min = {}
        return ast.Module(tuple(c for c in children if c is not None))

    def flow_decl(self, c: list[Any]) -> ast.FlowDecl:
        return ast.FlowDecl(c[1], c[2], _span(c))

    def version_decl(self, c: list[Any]) -> ast.VersionDecl:
        return ast.VersionDecl(self._int(c[1], fallback=1), _span(c))

    def enum_decl(self, c: list[Any]) -> ast.EnumDecl:
        members = tuple(m for m in c[2:] if isinstance(m, ast.Ident))
        return ast.EnumDecl(c[1], members, _span(c))

    def type_decl(self, c: list[Any]) -> ast.TypeDecl:
        return ast.TypeDecl(c[1], tuple(c[2:]), _span(c))

    def context_decl(self, c: list[Any]) -> ast.ContextDecl:
        return ast.ContextDecl(tuple(c[1:]), _span(c))

    def field(self, c: list[Any]) -> ast.FieldDecl:
        # name, type, EQUALS|None, expr|None
        return ast.FieldDecl(c[0], c[1], c[3], _span(c))

    param = field

    def context_field(self, c: list[Any]) -> ast.FieldDecl:
        # field_mark*, field
        decl: ast.FieldDecl = c[-1]
        return replace(decl, marks=tuple(c[:-1]))

    def field_mark(self, c: list[Any]) -> ast.Ident:
        return ast.Ident(str(c[0]), _token_span(c[0]))

    def params(self, c: list[Any]) -> tuple[ast.FieldDecl, ...]:
        return tuple(p for p in c if p is not None)

    def event_decl(self, c: list[Any]) -> ast.EventDecl:
        # INTERNAL|None, EVENT, name, params|None, require*
        mark = ast.Ident(str(c[0]), _token_span(c[0])) if c[0] is not None else None
        params = c[3] if c[3] is not None else ()
        return ast.EventDecl(c[2], params, tuple(c[4:]), _span(c), mark)

    def effect_decl(self, c: list[Any]) -> ast.EffectDecl:
        # EFFECT, name, params|None
        return ast.EffectDecl(c[1], c[2] if c[2] is not None else (), _span(c))

    def require(self, c: list[Any]) -> ast.Require:
        # REQUIRE, expr, ELSE, name, text, with_data|None
        return ast.Require(c[1], c[3], c[4], _span(c), c[5])

    def with_data(self, c: list[Any]) -> ast.Expr:
        return c[1]  # type: ignore[no-any-return]

    def named_text(self, keyword: str, c: list[Any]) -> ast.NamedText:
        return ast.NamedText(keyword, c[1], c[2], _span(c))  # type: ignore[arg-type]

    def message_decl(self, c: list[Any]) -> ast.NamedText:
        return self.named_text("message", c)

    def journal_decl(self, c: list[Any]) -> ast.NamedText:
        return self.named_text("journal", c)

    def template_decl(self, c: list[Any]) -> ast.NamedText:
        return self.named_text("template", c)

    # ---- migrations --------------------------------------------------------------------
    def migrate_decl(self, c: list[Any]) -> ast.MigrateDecl:
        # MIGRATE, FROM, INT, item*
        items = tuple(i for i in c[3:] if i is not None)
        return ast.MigrateDecl(self._int(c[2]), _token_span(c[2]), items, _span(c))

    def migrate_state(self, c: list[Any]) -> ast.MigrateMapping:
        return ast.MigrateMapping("state", c[1], c[3], _span(c))

    def migrate_field(self, c: list[Any]) -> ast.MigrateMapping:
        return ast.MigrateMapping("field", c[1], c[3], _span(c))

    def migrate_drop(self, c: list[Any]) -> ast.MigrateDrop:
        return ast.MigrateDrop(tuple(n for n in c[1:] if isinstance(n, ast.Ident)), _span(c))

    # ---- invariants and tests -----------------------------------------------------------
    def invariant_decl(self, c: list[Any]) -> ast.InvariantDecl:
        return ast.InvariantDecl(c[1], c[2], _span(c))

    def test_decl(self, c: list[Any]) -> ast.TestDecl:
        return ast.TestDecl(c[1], tuple(s for s in c[2:] if s is not None), _span(c))

    def given_step(self, c: list[Any]) -> ast.Given:
        return ast.Given(c[1], c[3], _span(c))

    def send_step(self, c: list[Any]) -> ast.Send:
        return ast.Send(c[1], c[2] or (), _span(c))

    def payload(self, c: list[Any]) -> tuple[tuple[ast.Ident, ast.Expr], ...]:
        return tuple(a for a in c if a is not None)

    def payload_arg(self, c: list[Any]) -> tuple[ast.Ident, ast.Expr]:
        return (c[0], c[1])

    def goto_step(self, c: list[Any]) -> ast.Goto:
        return ast.Goto(c[1], _span(c), c[2] is not None)

    def back_step(self, c: list[Any]) -> ast.Back:
        return ast.Back(_span(c))

    def advance_step(self, c: list[Any]) -> ast.Advance:
        return ast.Advance(self._duration(c[1]), _span(c))

    def expect_state(self, c: list[Any]) -> ast.ExpectState:
        return ast.ExpectState(c[2], _span(c))

    def expect_reject(self, c: list[Any]) -> ast.ExpectReject:
        return ast.ExpectReject(ast.Ident(str(c[2]), _token_span(c[2])), _span(c))

    def expect_journal(self, c: list[Any]) -> ast.ExpectJournal:
        return ast.ExpectJournal(ast.Ident(str(c[2]), _token_span(c[2])), c[3], _span(c))

    def expect_effect(self, c: list[Any]) -> ast.ExpectEffect:
        # EXPECT, EFFECT, NAME, effect_args|None
        name = ast.Ident(str(c[2]), _token_span(c[2]))
        return ast.ExpectEffect(name, c[3] or (), _span(c))

    effect_args = payload
    effect_arg = payload_arg

    def expect_no_effect(self, c: list[Any]) -> ast.ExpectNoEffect:
        # EXPECT, NO, EFFECT, NAME|None
        name = ast.Ident(str(c[3]), _token_span(c[3])) if c[3] is not None else None
        return ast.ExpectNoEffect(name, _span(c))

    def expect_value(self, c: list[Any]) -> ast.ExpectValue:
        return ast.ExpectValue(c[1], _span(c))

    # ---- types -------------------------------------------------------------------------
    def type_expr(self, c: list[Any]) -> ast.TypeExpr:
        base: ast.TypeExpr = c[0]
        if c[1] is None:
            return base
        return ast.TypeExpr(
            base.name, base.args, True, _span(c), base.low, base.high, base.is_range
        )

    def named_type(self, c: list[Any]) -> ast.TypeExpr:
        return ast.TypeExpr(c[0], (), False, _span(c))

    def generic_type(self, c: list[Any]) -> ast.TypeExpr:
        return ast.TypeExpr(c[0], tuple(c[1:]), False, _span(c))

    def range_type(self, c: list[Any]) -> ast.TypeExpr:
        return ast.TypeExpr(c[0], (), False, _span(c), c[1], c[3], True)

    def bound(self, c: list[Any]) -> float:
        return self._signed_number(c)

    def _signed_number(self, c: list[Any]) -> int | float:
        """`[MINUS] (INT | FLOAT)`, folded into one number."""
        minus, token = c[0] is not None, c[1]
        if token.type == "FLOAT":
            number: int | float = self._float(token)
        else:
            number = self._int(token, negative=minus)
        return -number if minus else number

    # ---- states and rules --------------------------------------------------------------
    def modifier(self, c: list[Token]) -> ast.Ident:
        return ast.Ident(str(c[0]), _token_span(c[0]))

    def state_body(self, c: list[Any]) -> list[Any]:
        return c

    def state_decl(self, c: list[Any]) -> ast.StateDecl:
        # children: modifier*, STATE, name, text|None, with_data|None, body|None
        name: ast.Ident = c[-4]
        title: ast.Text | None = c[-3]
        done_data: ast.Expr | None = c[-2]
        body: list[Any] = self._with_history_defaults(c[-1] or [])
        modifiers = tuple(c[:-5])
        return ast.StateDecl(
            name,
            title,
            modifiers,
            tuple(x for x in body if isinstance(x, ast.MetaDecl)),
            tuple(x for x in body if isinstance(x, ast.ActionBlock)),
            tuple(x for x in body if isinstance(x, ast.Rule)),
            _span(c),
            tuple(x for x in body if isinstance(x, ast.UnhandledDecl)),
            tuple(x for x in body if isinstance(x, ast.StateDecl | ast.HistoryDecl)),
            tuple(x for x in body if isinstance(x, ast.InitialRule)),
            done_data,
            tuple(x for x in body if isinstance(x, ast.Invoke)),
        )

    def invoke_decl(self, c: list[Any]) -> ast.Invoke:
        # INVOKE, name, payload, each|None, as|None, join|None, FORWARD|None, finalize|None
        each = c[3] or (None, None, None)
        named = c[4] or (None, ())
        return ast.Invoke(
            c[1],
            c[2] or (),
            named[0],
            each[0],
            each[1],
            each[2],
            c[5],
            c[6] is not None,
            c[7] or (),
            named[1],
            _span(c),
        )

    def invoke_each(self, c: list[Any]) -> tuple[Any, ...]:
        # FOR, name, name|None, expr
        return (c[1], c[2], c[3])

    def invoke_as(self, c: list[Any]) -> tuple[Any, ...]:
        # AS, name, INTO|None, lvalue|None
        return (c[1], c[3] or ())

    def invoke_join(self, c: list[Any]) -> ast.Ident:
        # JOIN, NAME|INT: `all`, `any` or how many children must finish
        token = c[1]
        join = ast.Ident(str(token), _token_span(token))
        if token.type == "NAME" and join.name not in ("all", "any"):
            self.report(
                "E003",
                f"unexpected `{join.name}` after `join`",
                join.span,
                "a fan-out joins `all` its children, `any` one, or a number of them: `join 2`",
            )
        elif token.type == "INT" and not 1 <= self._int(token) <= _MAX_JOIN:
            self.report(
                "E003",
                f"`join {join.name}`: a join waits for 1 to {_MAX_JOIN:,} children",
                join.span,
            )
        return join

    def invoke_finalize(self, c: list[Any]) -> tuple[ast.Action, ...]:
        # FINALIZE, DO, actions
        return c[2]  # type: ignore[no-any-return]

    def initial_rule(self, c: list[Any]) -> ast.InitialRule:
        # INITIAL, ARROW, target, target*, do_clause|None
        targets = tuple(x for x in c[2:-1] if isinstance(x, ast.Ident))
        return ast.InitialRule(targets, c[-1] or (), _span(c))

    def _with_history_defaults(self, body: list[Any]) -> list[Any]:
        """`history H -> X` in a state body: the grammar reads `-> X` as a direct rule (see
        flow.lark); right after a history, wherever the line breaks, it is the history's
        default (a direct rule goes before the history, or takes a guard)."""
        out: list[Any] = []
        for item in body:
            last = out[-1] if out else None
            if (
                isinstance(item, ast.Rule)
                and item.kind == "direct"
                and isinstance(last, ast.HistoryDecl)
                and last.default is None
                and item.guard is None
            ):
                if item.back or item.reenter:
                    self.report(
                        "E003",
                        "a history's default is a state, with actions at most",
                        item.span,
                        "write `history NAME -> STATE [do ...]`; a direct rule goes before the "
                        "history",
                    )
                out[-1] = replace(
                    last,
                    default=item.target,
                    span=last.span.to(item.span),
                    actions=item.actions,
                )
                continue
            out.append(item)
        return out

    def history_decl(self, c: list[Any]) -> ast.HistoryDecl:
        # HISTORY, DEEP|None, name
        return ast.HistoryDecl(c[2], c[1] is not None, None, _span(c))

    def top_history(self, c: list[Any]) -> ast.HistoryDecl:
        # HISTORY, DEEP|None, name, ARROW|None, target|None
        return ast.HistoryDecl(c[2], c[1] is not None, c[4], _span(c))

    def always_rule(self, c: list[Any]) -> ast.Rule:
        return self._rule("always", c, None, c[1], c[2])

    def unhandled_decl(self, c: list[Any]) -> ast.UnhandledDecl:
        return ast.UnhandledDecl(c[1], _span(c))

    def meta_decl(self, c: list[Any]) -> ast.MetaDecl:
        return ast.MetaDecl(c[1], _span(c))

    def entry_decl(self, c: list[Any]) -> ast.ActionBlock:
        return ast.ActionBlock("entry", c[2], _span(c))

    def exit_decl(self, c: list[Any]) -> ast.ActionBlock:
        return ast.ActionBlock("exit", c[2], _span(c))

    def guard(self, c: list[Any]) -> Any:
        return ("guard", c[0], c[1])  # the IF token stays: it starts the rule's span

    def arrow(self, c: list[Any]) -> Any:
        # ARROW, target, REENTER|None, do_clause|None, BACK|None
        # the ARROW token stays: it starts the span of a direct rule
        return ("arrow", c[0], c[1], c[3] or (), c[4] is not None, c[2] is not None)

    def reject(self, c: list[Any]) -> Any:
        return ("reject", c[1], c[2], c[3])

    def target(self, c: list[Any]) -> ast.Ident:
        item = c[0]
        if isinstance(item, Token):
            return ast.Ident("self", _token_span(item))
        return item  # type: ignore[no-any-return]

    def state_name(self, c: list[ast.Ident]) -> ast.Ident:
        return c[0] if len(c) == 1 else self.state_path(c)

    def state_path(self, c: list[ast.Ident]) -> ast.Ident:
        """`Cooking.Paused`: one name whose dots the resolver reads as a path."""
        return ast.Ident(".".join(part.name for part in c), c[0].span.to(c[-1].span))

    def do_clause(self, c: list[Any]) -> tuple[ast.Action, ...]:
        return c[1]  # type: ignore[no-any-return]

    def actions(self, c: list[Any]) -> tuple[ast.Action, ...]:
        return tuple(c)

    def _rule(
        self,
        kind: ast.RuleKind,
        c: list[Any],
        event: ast.Ident | None,
        guard: Any,
        outcome: Any,
        after: ast.Duration | None = None,
    ) -> ast.Rule:
        guard_expr = guard[2] if guard is not None else None
        span = _span(c)
        if outcome[0] == "reject":
            return ast.Rule(
                kind,
                event,
                guard_expr,
                None,
                (),
                False,
                after,
                outcome[1],
                outcome[2],
                span,
                outcome[3],
            )
        _, _arrow, target, actions, back, reenter = outcome
        return ast.Rule(
            kind, event, guard_expr, target, actions, back, after, None, None, span, reenter=reenter
        )

    def on_rule(self, c: list[Any]) -> ast.Rule:
        # ON, event_pattern+, guard|None, outcome
        rule = self._rule("on", c, c[1], c[-2], c[-1])
        more = tuple(c[2:-2])
        return replace(rule, more_events=more) if more else rule

    def event_name(self, c: list[ast.Ident]) -> ast.Ident:
        if len(c) == 1:
            return c[0]
        return ast.Ident(".".join(part.name for part in c), c[0].span.to(c[-1].span))

    def event_pattern(self, c: list[Any]) -> ast.Ident:
        # name+, MUL_OP|None: `error.*` is a prefix pattern, kept as one name ending in `.*`
        star = c[-1]
        name = self.event_name([x for x in c[:-1]])
        if star is None:
            return name
        span = name.span.to(_token_span(star))
        if str(star) != "*":
            self.report(
                "E003",
                f"unexpected `{star}` in an event name",
                _token_span(star),
                "a prefix of event names ends in `.*`: `on error.* -> X`",
            )
        return ast.Ident(name.name + ".*", span)

    def done_pattern(self, c: list[Any]) -> ast.Ident:
        # name, STATE, name+: `done.state.Review`, the completion event of state `Review`
        head: ast.Ident = c[0]
        path = [x for x in c[2:] if isinstance(x, ast.Ident)]
        span = head.span.to(path[-1].span)
        if head.name != "done":
            self.report(
                "E003",
                f"unexpected `{head.name}.state`: only completion events name a state",
                span,
                "a state's completion event is written `done.state.NAME`",
            )
        return ast.Ident("done.state." + ".".join(p.name for p in path), span)

    def direct_rule(self, c: list[Any]) -> ast.Rule:
        return self._rule("direct", c, None, c[0], c[1])

    def else_rule(self, c: list[Any]) -> ast.Rule:
        return self._rule("else", c, None, None, c[1])

    def after_rule(self, c: list[Any]) -> ast.Rule:
        return self._rule("after", c, None, c[2], c[3], self._duration(c[1]))

    def after_expr_rule(self, c: list[Any]) -> ast.Rule:
        # AFTER, expr, NAME (the unit), guard|None, arrow
        delay = self._delay(c[1], c[2])
        return replace(self._rule("after", c, None, c[3], c[4]), delay=delay)

    def _delay(self, amount: ast.Expr, token: Token) -> ast.ComputedDelay:
        """`EXPR UNIT` of a computed delay (a timer's or a scheduled event's)."""
        unit = ast.Ident(str(token), _token_span(token))
        unit_ms = _DURATION_UNITS_MS.get(unit.name)
        # `_` is the placeholder error recovery inserts for a missing unit, already reported.
        if unit_ms is None and unit.name != "_":
            self.report(
                "E213",
                f"unknown time unit `{unit.name}`",
                unit.span,
                "a computed delay ends with its unit: `ms`, `s`, `m`, `h` or `d` "
                "(`after backoff_ms ms`)",
            )
        return ast.ComputedDelay(amount, unit, unit_ms or 1, amount.span.to(unit.span))

    def _duration(self, token: Token) -> ast.Duration:
        text = str(token)
        digits = text.rstrip("mshd")
        unit = text[len(digits) :]
        # A number too long to read is longer than any timer may wait (E120 in resolve).
        count = int(digits) if len(digits) <= _MAX_INT_DIGITS else _MAX_INT
        return ast.Duration(text, count * _DURATION_UNITS_MS[unit], _token_span(token))

    def assign(self, c: list[Any]) -> ast.Assign:
        return ast.Assign(c[0], str(c[1]), c[2], _span(c))  # type: ignore[arg-type]

    def put_action(self, c: list[Any]) -> ast.PutAction:
        # lvalue, key, EQUALS, value
        return ast.PutAction(c[0], c[1], c[3], _span(c))

    def action_call(self, c: list[Any]) -> ast.ActionCall:
        args = tuple(a for a in c[1:] if a is not None)
        return ast.ActionCall(c[0], args, _span(c))

    def raise_action(self, c: list[Any]) -> ast.RaiseAction:
        # RAISE, event_name, payload|None
        return ast.RaiseAction(c[1], c[2] or (), _span(c))

    def emit_action(self, c: list[Any]) -> ast.EmitAction:
        # EMIT, name, payload|None
        return ast.EmitAction(c[1], c[2] or (), _span(c))

    def send_action(self, c: list[Any]) -> ast.SendAction:
        # SEND, event_name, payload|None, AFTER, DURATION, AS|None, expr|None, TO|None, name|None
        after = self._duration(c[4])
        return ast.SendAction(c[1], c[2] or (), after, None, c[6], _span(c), c[8])

    def send_expr_action(self, c: list[Any]) -> ast.SendAction:
        # SEND, event_name, payload|None, AFTER, expr, NAME (the unit), AS|None, expr|None,
        # TO|None, name|None
        delay = self._delay(c[4], c[5])
        return ast.SendAction(c[1], c[2] or (), None, delay, c[7], _span(c), c[9])

    def send_to_action(self, c: list[Any]) -> ast.SendAction:
        # SEND, event_name, payload|None, TO, name
        return ast.SendAction(c[1], c[2] or (), None, None, None, _span(c), c[4])

    def cancel_action(self, c: list[Any]) -> ast.CancelAction:
        # CANCEL, expr
        return ast.CancelAction(c[1], _span(c))

    def action_block(self, c: list[Any]) -> tuple[ast.Action, ...]:
        actions: tuple[ast.Action, ...] = c[0] or ()
        return actions

    def if_action(self, c: list[Any]) -> ast.IfAction:
        # IF expr block, (ELIF expr block)*, ELSE_BLOCK|None, block|None
        branches: list[ast.IfBranch] = []
        i = 0
        while i + 2 < len(c) and isinstance(c[i], Token) and c[i].type in ("IF", "ELIF"):
            keyword, guard, block = c[i], c[i + 1], c[i + 2]
            branches.append(ast.IfBranch(guard, block, _span([keyword, guard, block])))
            i += 3
        keyword, block = c[-2], c[-1]
        if keyword is not None:
            branches.append(ast.IfBranch(None, block, _span([keyword, block])))
        return ast.IfAction(tuple(branches), _span(c))

    def for_action(self, c: list[Any]) -> ast.ForAction:
        # FOR, name, name|None, expr, block
        return ast.ForAction(c[1], c[2], c[3], c[4], _span(c))

    def lvalue(self, c: list[Any]) -> tuple[ast.Ident, ...]:
        return tuple(c)

    # ---- meta JSON ---------------------------------------------------------------------
    def json_object(self, c: list[Any]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for pair in c:
            if pair is None:
                continue
            key, key_span, value = pair
            if key in result:
                self.report("E121", f"meta key `{key}` given twice", key_span)
            result[key] = None if value is _JSON_NULL else value
        return result

    def json_pair(self, c: list[Any]) -> tuple[str, Span, Any]:
        key = c[0]
        if isinstance(key, ast.Ident):
            return key.name, key.span, c[1]
        return self._string(key), _token_span(key), c[1]

    def json_array(self, c: list[Any]) -> list[Any]:
        return [None if x is _JSON_NULL else x for x in c if x is not None]

    def json_string(self, c: list[Token]) -> str:
        return self._string(c[0])

    def json_number(self, c: list[Any]) -> int | float:
        return self._signed_number(c)

    def json_true(self, c: list[Any]) -> bool:
        return True

    def json_false(self, c: list[Any]) -> bool:
        return False

    def json_null(self, c: list[Any]) -> object:
        return _JSON_NULL

    # ---- expressions -------------------------------------------------------------------
    def _expr(self, node: Any, *children: Any) -> Any:
        if any(isinstance(ch, ast.Invalid) for ch in children):
            return ast.Invalid(node.span)  # already reported once, inside
        depth = 1 + max((self.depth.get(id(ch), 0) for ch in children), default=0)
        if depth > MAX_EXPR_DEPTH:
            self.report(
                "E005",
                f"expression nested more than {MAX_EXPR_DEPTH} levels deep",
                node.span,
                "split it with intermediate context fields",
            )
            node = ast.Invalid(node.span)
            depth = 1
        self.depth[id(node)] = depth
        return node

    def _binary(self, op: str, c: list[Any], left: Any, right: Any) -> Any:
        return self._expr(ast.Binary(op, left, right, _span(c)), left, right)

    def or_op(self, c: list[Any]) -> Any:
        return self._binary("or", c, c[0], c[1])

    def and_op(self, c: list[Any]) -> Any:
        return self._binary("and", c, c[0], c[1])

    def not_op(self, c: list[Any]) -> Any:
        return self._expr(ast.Unary("not", c[0], _span(c)), c[0])

    def compare(self, c: list[Any]) -> Any:
        return self._binary(str(c[1]), c, c[0], c[2])

    def in_op(self, c: list[Any]) -> Any:
        return self._binary("in", c, c[0], c[1])

    def not_in_op(self, c: list[Any]) -> Any:
        return self._binary("not in", c, c[0], c[1])

    def binary(self, c: list[Any]) -> Any:
        return self._binary(str(c[1]), c, c[0], c[2])

    def negate(self, c: list[Any]) -> Any:
        if isinstance(c[1], ast.Literal_):
            self.unsigned_min.pop(c[1].span, None)
        return self._expr(ast.Unary("neg", c[1], _span(c)), c[1])

    def attribute(self, c: list[Any]) -> Any:
        return self._expr(ast.Attribute(c[0], c[1], _span(c)), c[0])

    def subscript(self, c: list[Any]) -> Any:
        return self._expr(ast.Subscript(c[0], c[1], _span(c)), c[0], c[1])

    def name_ref(self, c: list[Any]) -> Any:
        ident: ast.Ident = c[0]
        return ast.Name(ident.name, ident.span)

    def call(self, c: list[Any]) -> Any:
        args = tuple(a for a in c[1:] if a is not None)
        return self._expr(ast.Call(c[0], args, _span(c)), *args)

    def quantifier(self, c: list[Any]) -> Any:
        # name, `ITEM in LIST`, body
        func, head, body = c
        span = _span(c)
        if not (
            isinstance(head, ast.Binary) and head.op == "in" and isinstance(head.left, ast.Name)
        ):
            if not isinstance(head, ast.Invalid):
                self.report(
                    "E003",
                    f"`{func.name}(...: ...)` starts with `ITEM in LIST`",
                    head.span,
                    f"write `{func.name}(x in xs: ...)`",
                )
            return ast.Invalid(span)
        var = ast.Ident(head.left.name, head.left.span)
        return self._expr(ast.Quantifier(func, var, head.right, body, span), head.right, body)

    def conditional(self, c: list[Any]) -> Any:
        # IF, cond, then, else
        return self._expr(ast.Conditional(c[1], c[2], c[3], _span(c)), c[1], c[2], c[3])

    def event_field(self, c: list[Any]) -> Any:
        return ast.EventField(c[1].name, _span(c))

    def state_field(self, c: list[Any]) -> Any:
        return ast.StateField(c[1].name, _span(c))

    def state_meta(self, c: list[Any]) -> Any:
        # STATE, META, name
        return ast.StateMeta(c[2].name, _span(c))

    def int_lit(self, c: list[Token]) -> Any:
        value = self._int(c[0], negative=True)
        literal = ast.Literal_(value, "int", _token_span(c[0]))
        if value > _MAX_INT:
            # 2**63 fits only under a minus sign, which `negate` (or `start`) decides.
            self.unsigned_min[literal.span] = c[0]
        return literal

    def _int(self, token: Token, *, negative: bool = False, fallback: int = 0) -> int:
        digits = str(token).lstrip("0")
        # Past 19 digits no value fits 64 bits; past 4,300 Python's `int()` refuses to read one.
        if len(digits) > _MAX_INT_DIGITS or int(digits or "0") > _MAX_INT + (1 if negative else 0):
            self.too_large(token)
            return fallback
        return int(digits or "0")

    def too_large(self, token: Token) -> None:
        self.report(
            "E209",
            "number too large",
            _token_span(token),
            "integers must fit in 64 bits (-9223372036854775808 to 9223372036854775807)",
        )

    def float_lit(self, c: list[Token]) -> Any:
        return ast.Literal_(self._float(c[0]), "float", _token_span(c[0]))

    def _float(self, token: Token) -> float:
        value = float(str(token))
        if math.isinf(value):
            self.report(
                "E209",
                "number too large",
                _token_span(token),
                "numbers must fit a 64-bit float (about 1.8e308)",
            )
            return 0.0
        return value

    def str_lit(self, c: list[Token]) -> Any:
        return ast.Literal_(self._string(c[0]), "str", _token_span(c[0]))

    def true_lit(self, c: list[Token]) -> Any:
        return ast.Literal_(True, "bool", _token_span(c[0]))

    def false_lit(self, c: list[Token]) -> Any:
        return ast.Literal_(False, "bool", _token_span(c[0]))

    def none_lit(self, c: list[Token]) -> Any:
        return ast.Literal_(None, "none", _token_span(c[0]))

    def list_lit(self, c: list[Any]) -> Any:
        items = tuple(x for x in c if x is not None and not isinstance(x, Token))
        return self._expr(ast.ListLit(items, _span(c)), *items)

    def map_lit(self, c: list[Any]) -> Any:
        entries = tuple(x for x in c if x is not None and not isinstance(x, Token))
        flat = [part for entry in entries for part in entry]
        return self._expr(ast.MapLit(entries, _span(c)), *flat)

    def map_entry(self, c: list[Any]) -> tuple[Any, Any]:
        return (c[0], c[1])


_BUILDER = _AstBuilder()
#: The cached parser shares one builder; parses take turns.
_PARSE_LOCK = threading.Lock()

#: `null` inside meta, kept apart from the parser's None placeholders until the value is built.
_JSON_NULL = object()
