"""The fast front end: one regex scan and a hand-written recursive-descent parser that build the
AST of a well-formed file, node for node and span for span as the Lark parser builds it.

The Lark grammar (`grammar/flow.lark`) stays the definition of the language and the Lark parser
its reference: `parse_source` tries this parser first and, when it returns None, parses with
Lark, which reports every diagnostic. This parser knows the language it was written for and
gives up (`NotMine`, turned into None) on anything else: a syntax error, a character or a word
it does not know (every keyword of the grammar it was not written for, read from the grammar
file itself), and anything the Lark path would report a diagnostic for (a bad escape, an integer
past 64 bits, a meta key given twice, nesting past the limits, a history's default with `back`
or `reenter`, an unknown time unit, a completion event not named `done.state.X`). So syntax
added to the grammar later is parsed by Lark until this parser learns it, and is never misread
here.

Why it is faster: Lark builds one `Token` object per token and runs a generic reduce callback
per grammar rule, with a span found by walking each rule's children; here the scan is one
`findall` over the text, tokens are four parallel lists, and each node is built once with its
span taken from the two tokens or nodes that bound it. `tests/compiler/test_fastparse.py`
checks that both parsers agree on every flow in the repository and on generated ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from functools import cache
from importlib import resources
from typing import Any, NoReturn, TypeVar

from flowc.compiler import ast
from flowc.compiler.source import Span
from flowc.runtime.operators import BINARY_OPERATORS, COMPARE, NOT, OR

T = TypeVar("T")

#: Past these the Lark path reports E005 (see parse.MAX_NESTING and parse.MAX_EXPR_DEPTH); this
#: parser gives up well before either, so it never has to decide the boundary itself.
_MAX_DEPTH = 60
_MAX_EXPR_TOKENS = 150
_MAX_INT = 2**63 - 1
#: The most children a `join N` may wait for (parse.py reports a larger one).
_MAX_JOIN = 1_000_000
_DURATION_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}

#: Keywords the grammar lets stand for a name (its `name` rule), as this parser knows them.
_SOFT = frozenset(
    [
        "flow", "version", "enum", "type", "context", "initial", "final", "choice", "reject",
        "message", "journal", "template", "require", "back", "migrate", "from", "field", "drop",
        "invariant", "test", "given", "send", "goto", "advance", "expect", "force", "with",
        "unhandled", "reenter", "parallel", "history", "effect", "emit", "raise", "elif", "for",
        "input", "hidden", "no", "internal", "cancel", "as",
        "invoke", "to", "join", "forward", "finalize", "into",
    ]
)  # fmt: skip
#: Words a payload field's name may be (the grammar's `field_name`).
_FIELD_WORDS = _SOFT | {"state"}
#: The marks a context field may start with.
_FIELD_MARKS = frozenset(["input", "hidden"])
#: Reserved words this parser knows.
_HARD = frozenset(
    [
        "and", "or", "not", "in", "if", "else", "do", "event", "state", "self", "true", "false",
        "none", "null", "on", "entry", "exit", "after", "meta", "always", "deep",
    ]
)  # fmt: skip
_PUNCTUATION = [
    "->", "..", "==", "!=", "<=", ">=", "+=", "-=",
    "<", ">", "=", "+", "-", "*", "/", "%", "?", "(", ")", "[", "]", "{", "}", ",", ";", ":", ".",
]  # fmt: skip
#: Binary operators by precedence (see `_Parser.operation`); `not in` (two tokens) is a
#: comparison too, read apart.
_PRECEDENCE = {s: op.level for s, op in BINARY_OPERATORS.items() if s != "not in"}
_UNKNOWN = "!unknown"

# The scan: trivia (whitespace and comments, as the grammar's WS and COMMENT; possessive, so
# that a comment is never searched for tokens), then one token, or any other character, which this
# parser does not know, or the end of the text. Where two terminals can match at one place,
# they are tried in the order FlowLexer tries them (by priority, then longest first): a
# triple-quoted string before a string, a duration before a float before an integer. Words,
# then punctuation, come first, as the commonest tokens, which no other terminal can start.
# `findall` returns the (trivia, token) pairs in one call; as something matches at every
# position, it skips nothing.
_TOKEN = re.compile(
    r"([ \t\r\n\f]*+(?:#[^\n]*+[ \t\r\n\f]*+)*+)("
    r"[A-Za-z_][A-Za-z0-9_]*"
    r"|->|\.\.|==|!=|<=|>=|\+=|-="
    r"|[<>=+\-*/%?()\[\]{},;:.]"
    r'|"""[\s\S]*?"""'
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
    r"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
    r"|[0-9]+(?:ms|s|m|h|d)\b"
    r"|[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?"
    r"|[0-9]+"
    r"|[^ \t\r\n\f#]"
    r"|\Z)"
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


class NotMine(Exception):
    """The text holds something this parser leaves to the Lark parser."""


def _give_up() -> NoReturn:
    raise NotMine


@cache
def _grammar_words() -> tuple[frozenset[str], frozenset[str]]:
    """(every keyword of the grammar, the keywords its `name` rule accepts), read from the
    grammar file: what Lark's lexer makes keywords of is every word written in quotes there."""
    grammar = resources.files("flowc.grammar").joinpath("flow.lark").read_text(encoding="utf-8")
    code = re.sub(r"//[^\n]*", "", grammar)
    words = frozenset(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', code))
    terminals = dict(re.findall(r'^([A-Z_]+)(?:\.\d+)?:\s*"([A-Za-z_]+)"\s*$', code, re.M))
    rule = re.search(r"^name:((?:[^\n]*\n\s+\|)*[^\n]*)", code, re.M)
    soft = frozenset(
        terminals[name]
        for name in re.findall(r"[A-Z_]+", rule.group(1) if rule else "")
        if name in terminals
    )
    return words, soft


@cache
def _kinds() -> dict[str, str]:
    """The kind of each fixed token: a keyword or punctuation is its own kind; a word the
    grammar makes a keyword that this parser does not know (or knows differently) is unknown."""
    words, soft = _grammar_words()
    kinds = {p: p for p in _PUNCTUATION}
    kinds[""] = "$END"  # the scan's last match, at the end of the text
    for word in words:
        mine = word in _SOFT or word in _HARD
        same = (word in _SOFT) == (word in soft)
        kinds[word] = word if mine and same else _UNKNOWN
    for word in (_SOFT | _HARD) - words:
        kinds[word] = _UNKNOWN  # no longer a keyword there: leave it to Lark
    return kinds


def _maker(cls: type[T], arity: int) -> Callable[..., T]:
    """A constructor for a frozen slotted dataclass of exactly `arity` fields that sets the slots
    directly: the generated `__init__` of a frozen class goes through `object.__setattr__` per
    field, about twice the cost, and the AST of a large file is a million such objects. A class
    that has grown a field since is built by its own constructor."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    if len(names) != arity:
        return cls
    new = object.__new__
    setters = [getattr(cls, name).__set__ for name in names]
    if arity == 2:
        s0, s1 = setters

        def make2(a: Any, b: Any) -> Any:
            node = new(cls)
            s0(node, a)
            s1(node, b)
            return node

        return make2
    if arity == 3:
        s0, s1, s2 = setters

        def make3(a: Any, b: Any, c: Any) -> Any:
            node = new(cls)
            s0(node, a)
            s1(node, b)
            s2(node, c)
            return node

        return make3
    s0, s1, s2, s3 = setters

    def make4(a: Any, b: Any, c: Any, d: Any) -> Any:
        node = new(cls)
        s0(node, a)
        s1(node, b)
        s2(node, c)
        s3(node, d)
        return node

    return make4


_new_tuple = tuple.__new__


def _span(line: int, column: int, end_line: int, end_column: int) -> Span:
    """`Span(...)` without the named tuple's own `__new__` (a Python function)."""
    return _new_tuple(Span, (line, column, end_line, end_column))


_ident = _maker(ast.Ident, 2)
_name = _maker(ast.Name, 2)
_literal = _maker(ast.Literal_, 3)
_binary = _maker(ast.Binary, 4)
_unary = _maker(ast.Unary, 3)
_attribute = _maker(ast.Attribute, 3)
_event_field = _maker(ast.EventField, 2)
_call = _maker(ast.Call, 3)
_assign = _maker(ast.Assign, 4)


def _join(first: Span, last: Span) -> Span:
    """`first.to(last)`, built as `_span` builds spans (inlined where a large file's parse
    makes a span per token)."""
    return _new_tuple(Span, (first.line, first.column, last.end_line, last.end_column))


def parse_module(text: str) -> ast.Module | None:
    """The AST of `text`, as the Lark parser builds it; None when this parser leaves the text
    to Lark (see the module docstring)."""
    try:
        return _Parser(text).module()
    except (NotMine, RecursionError):
        return None


def token_count(text: str) -> int:
    """How many tokens the scan finds in `text` (for benchmarks), or -1 if it gives up."""
    try:
        return len(_Parser(text).kinds) - 1  # less the end of the text
    except NotMine:
        return -1


def unescape(body: str) -> tuple[str, int | None]:
    """Unescape a quoted string's body; also returns the offset of a bad escape, if any."""
    if "\\" not in body:
        return body, None
    out: list[str] = []
    i = 0
    bad: int | None = None
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "u" and is_hex(body[i + 2 : i + 6]):
            code = int(body[i + 2 : i + 6], 16)
            i += 6
            if 0xD800 <= code <= 0xDFFF:
                # UTF-16 surrogates, as JSON writes characters past U+FFFF: a high one and a
                # low one make one character; alone, neither is text.
                low = body[i + 2 : i + 6] if body[i : i + 2] == "\\u" else ""
                if code <= 0xDBFF and is_hex(low) and 0xDC00 <= int(low, 16) <= 0xDFFF:
                    code = 0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)
                    i += 6
                else:
                    if bad is None:
                        bad = i - 6
                    continue
            out.append(chr(code))
        else:
            if bad is None:
                bad = i
            out.append(nxt)
            i += 2
    return "".join(out), bad


def is_hex(text: str) -> bool:
    return len(text) == 4 and all(c in "0123456789abcdefABCDEF" for c in text)


def _string(raw: str) -> str:
    value, bad = unescape(raw[1:-1])
    if bad is not None:
        _give_up()  # E007, reported by the Lark path
    return value


def _int(raw: str) -> int:
    if len(raw) < 19:  # fewer than 19 digits: below 2**63 whatever they are
        return int(raw)
    digits = raw.lstrip("0")
    if len(digits) > 19 or int(digits or "0") > _MAX_INT:
        _give_up()  # E209 (or 2**63 under a minus sign, which the Lark path decides)
    return int(digits or "0")


def _float(raw: str) -> float:
    value = float(raw)
    if value in (float("inf"), float("-inf")):
        _give_up()  # E209
    return value


#: Characters of text scanned per `findall` (see `_scanned`).
_SCAN_BLOCK = 1 << 16


def _scanned(text: str) -> Iterator[list[tuple[str, str]]]:
    """The scan's (trivia, token) pairs, a block of lines at a time: one `findall` over a large
    file makes all of its pairs at once (a hundred megabytes at 10,000 states, pages the system
    must hand over and take back). A block ends after a newline, which no token but a
    triple-quoted string can hold: a text with one is scanned whole. The end-of-text match of
    each block but the last is dropped, and its trivia carried into the next block."""
    size = len(text)
    if size <= _SCAN_BLOCK or '"""' in text:
        yield _TOKEN.findall(text)
        return
    carry = ""
    start = 0
    while start < size:
        end = text.find("\n", start + _SCAN_BLOCK)
        end = size if end < 0 else end + 1
        pairs = _TOKEN.findall(text, start, end)
        if carry:
            pairs[0] = (carry + pairs[0][0], pairs[0][1])
        if end < size:
            # The block's end: matched with its trivia, then empty (`findall` tries again
            # after a non-empty match): trivia, and no token.
            carry = ""
            while pairs and not pairs[-1][1]:
                carry = pairs.pop()[0] + carry
        yield pairs
        start = end


def _classify(token: str) -> str:
    """The kind of a token that is not a keyword or punctuation."""
    first = token[0]
    if "0" <= first <= "9":
        if "." in token:
            return "FLOAT"
        return "INT" if token[-1].isdigit() else "DURATION"
    if first == "_" or first.isalpha():
        if not token.isascii():
            _give_up()
        return "NAME"
    if first in "\"'" and len(token) >= 2 and token[-1] == first:
        return "LONG_STRING" if token.startswith('"""') and len(token) >= 6 else "STRING"
    _give_up()  # a character no token starts with (E002)


@dataclass
class _StateBody:
    """The items of a state's body, by kind, in order."""

    metas: list[ast.MetaDecl] = field(default_factory=list)
    blocks: list[ast.ActionBlock] = field(default_factory=list)
    rules: list[ast.Rule] = field(default_factory=list)
    unhandled: list[ast.UnhandledDecl] = field(default_factory=list)
    children: list[ast.StateDecl | ast.HistoryDecl] = field(default_factory=list)
    initial_rules: list[ast.InitialRule] = field(default_factory=list)
    invokes: list[ast.Invoke] = field(default_factory=list)


class _Parser:
    """Recursive descent over the token lists; each method parses one grammar rule from
    `self.i` and leaves `self.i` after it."""

    def __init__(self, text: str) -> None:
        # The fixed kinds, and each word, number and string met so far with the kind it was
        # given (a large file names the same fields and states again and again).
        known = dict(_kinds())
        get = known.get
        kinds: list[str] = []
        texts: list[str] = []
        lines: list[int] = []
        cols: list[int] = []
        #: end (line, column) of the tokens that span lines (triple-quoted strings)
        self.ends: dict[int, tuple[int, int]] = {}
        add_kind, add_text = kinds.append, texts.append
        add_line, add_col = lines.append, cols.append
        line = 1
        col = 1
        for pairs in _scanned(text):
            for trivia, token in pairs:
                if trivia:
                    if "\n" in trivia:
                        line += trivia.count("\n")
                        col = len(trivia) - trivia.rfind("\n")
                    else:
                        col += len(trivia)
                kind = get(token)
                if kind is None:
                    kind = _classify(token)
                    if kind == "LONG_STRING" and "\n" in token:
                        add_kind(kind)
                        add_text(token)
                        add_line(line)
                        add_col(col)
                        line += token.count("\n")
                        col = len(token) - token.rfind("\n")
                        self.ends[len(kinds) - 1] = (line, col)
                        continue
                    known[token] = kind
                elif kind is _UNKNOWN:
                    _give_up()
                add_kind(kind)
                add_text(token)
                add_line(line)
                add_col(col)
                col += len(token)
        if kinds[-1] != "$END":  # pragma: no cover - `\Z` matches at the end of every text
            _give_up()
        self.kinds = kinds
        self.texts = texts
        self.lines = lines
        self.cols = cols
        self.i = 0
        self.depth = 0

    # ---- tokens ------------------------------------------------------------------------
    def expect(self, kind: str) -> int:
        i = self.i
        if self.kinds[i] != kind:
            _give_up()
        self.i = i + 1
        return i

    def token_span(self, i: int) -> Span:
        end = self.ends.get(i) if self.ends else None
        if end is not None:
            return _span(self.lines[i], self.cols[i], end[0], end[1])
        line = self.lines[i]
        col = self.cols[i]
        return _new_tuple(Span, (line, col, line, col + len(self.texts[i])))

    def from_token(self, i: int, last: Span) -> Span:
        """The span from token `i` to the end of `last`."""
        return _new_tuple(Span, (self.lines[i], self.cols[i], last.end_line, last.end_column))

    def name(self) -> ast.Ident:
        i = self.i
        kind = self.kinds[i]
        if kind != "NAME" and kind not in _SOFT:
            _give_up()
        self.i = i + 1
        line = self.lines[i]
        col = self.cols[i]
        text = self.texts[i]
        return _ident(text, _new_tuple(Span, (line, col, line, col + len(text))))

    def field_name(self) -> ast.Ident:
        """A payload field's name: a name, or `state` (the grammar's `field_name`)."""
        if self.kinds[self.i] != "state":
            return self.name()
        i = self.i
        self.i = i + 1
        return _ident(
            "state",
            _new_tuple(Span, (self.lines[i], self.cols[i], self.lines[i], self.cols[i] + 5)),
        )

    def is_name(self, i: int) -> bool:
        kind = self.kinds[i]
        return kind == "NAME" or kind in _SOFT

    def text(self) -> ast.Text:
        i = self.i
        kind = self.kinds[i]
        raw = self.texts[i]
        if kind == "STRING":
            self.i = i + 1
            return ast.Text(_string(raw), self.token_span(i))
        if kind == "LONG_STRING":
            self.i = i + 1
            body = raw[3:-3]
            if body.startswith("\r\n"):
                body = body[2:]
            elif body.startswith("\n"):
                body = body[1:]
            return ast.Text(body, self.token_span(i))
        _give_up()

    def optional_text(self) -> ast.Text | None:
        kind = self.kinds[self.i]
        if kind == "STRING" or kind == "LONG_STRING":
            return self.text()
        return None

    def duration(self) -> ast.Duration:
        i = self.expect("DURATION")
        raw = self.texts[i]
        digits = raw.rstrip("mshd")
        return ast.Duration(
            raw, _int(digits) * _DURATION_UNITS_MS[raw[len(digits) :]], self.token_span(i)
        )

    # ---- declarations ------------------------------------------------------------------
    def module(self) -> ast.Module:
        kinds = self.kinds
        decls: list[Any] = []
        add = decls.append
        while True:
            kind = kinds[self.i]
            if kind in _STATE_START:
                add(self.state_decl())
            elif kind == "on":
                add(self.on_rule())
            elif kind == "$END":
                return ast.Module(tuple(decls))
            else:
                method = _DECLARATIONS.get(kind)
                if method is None:
                    _give_up()
                add(method(self))

    def flow_decl(self) -> ast.FlowDecl:
        start = self.expect("flow")
        name = self.name()
        title = self.optional_text()
        return ast.FlowDecl(name, title, self.from_token(start, (title or name).span))

    def version_decl(self) -> ast.VersionDecl:
        start = self.expect("version")
        number = self.expect("INT")
        value = _int(self.texts[number])
        return ast.VersionDecl(value, self.from_token(start, self.token_span(number)))

    def enum_decl(self) -> ast.EnumDecl:
        start = self.expect("enum")
        name = self.name()
        self.expect("{")
        members = self.separated(self.name, "}")
        self.expect("}")
        last = members[-1].span if members else name.span
        return ast.EnumDecl(name, tuple(members), self.from_token(start, last))

    def fields(self, *, marked: bool = False) -> tuple[ast.FieldDecl, ...]:
        """`field*` up to the closing `}` of a record type, or the context's `context_field*`
        (`marked`: each may start with `input` / `hidden`)."""
        found: list[ast.FieldDecl] = []
        while self.kinds[self.i] != "}":
            marks: list[ast.Ident] = []
            while marked and self.kinds[self.i] in _FIELD_MARKS and self.kinds[self.i + 1] != ":":
                marks.append(ast.Ident(self.texts[self.i], self.token_span(self.i)))
                self.i += 1
            decl = self.field(trailing_comma=True)
            found.append(replace(decl, marks=tuple(marks)) if marks else decl)
        self.i += 1
        return tuple(found)

    def field(self, *, trailing_comma: bool, payload: bool = False) -> ast.FieldDecl:
        name = self.field_name() if payload else self.name()
        self.expect(":")
        type_ = self.type_expr()
        default = None
        if self.kinds[self.i] == "=":
            self.i += 1
            default = self.expr()
        if trailing_comma and self.kinds[self.i] == ",":
            self.i += 1
        last = default.span if default is not None else type_.span
        return ast.FieldDecl(name, type_, default, _join(name.span, last))

    def type_decl(self) -> ast.TypeDecl:
        start = self.expect("type")
        name = self.name()
        self.expect("{")
        found = self.fields()
        last = found[-1].span if found else name.span
        return ast.TypeDecl(name, found, self.from_token(start, last))

    def context_decl(self) -> ast.ContextDecl:
        start = self.expect("context")
        self.expect("{")
        found = self.fields(marked=True)
        last = found[-1].span if found else self.token_span(start)
        return ast.ContextDecl(found, self.from_token(start, last))

    def internal_event_decl(self) -> ast.EventDecl:
        """`internal event ...`: an event only the flow itself sends."""
        start = self.expect("internal")
        mark = ast.Ident("internal", self.token_span(start))
        if self.kinds[self.i] != "event":
            _give_up()
        decl = self.event_decl()
        return replace(decl, span=_join(mark.span, decl.span), internal=mark)

    def event_decl(self) -> ast.EventDecl:
        start = self.expect("event")
        name = self.dotted_name()
        params = self.params()
        last = params[-1].span if params else name.span
        requires: list[ast.Require] = []
        while self.kinds[self.i] == "require":
            requires.append(self.require())
        if requires:
            last = requires[-1].span
        return ast.EventDecl(name, params, tuple(requires), self.from_token(start, last))

    def params(self) -> tuple[ast.FieldDecl, ...]:
        """`[params]` of an event or an effect: `(name: type [= default], ...)`, or nothing."""
        if self.kinds[self.i] != "(":
            return ()
        self.i += 1
        found: list[ast.FieldDecl] = []
        if self.kinds[self.i] != ")":
            found.append(self.field(trailing_comma=False, payload=True))
            while self.kinds[self.i] == ",":
                self.i += 1
                if self.kinds[self.i] == ")":
                    break
                found.append(self.field(trailing_comma=False, payload=True))
        self.expect(")")
        return tuple(found)

    def effect_decl(self) -> ast.EffectDecl:
        start = self.expect("effect")
        name = self.name()
        params = self.params()
        last = params[-1].span if params else name.span
        return ast.EffectDecl(name, params, self.from_token(start, last))

    def top_history(self) -> ast.HistoryDecl:
        """`history [deep] NAME [-> TARGET]` outside any state (which resolve reports, E131)."""
        history = self.history_decl()
        if self.kinds[self.i] != "->":
            return history
        self.i += 1
        default = self.target()
        return ast.HistoryDecl(
            history.name, history.deep, default, _join(history.span, default.span)
        )

    def history_decl(self) -> ast.HistoryDecl:
        start = self.expect("history")
        deep = self.kinds[self.i] == "deep"
        if deep:
            self.i += 1
        name = self.name()
        return ast.HistoryDecl(name, deep, None, self.from_token(start, name.span))

    def require(self) -> ast.Require:
        start = self.expect("require")
        guard = self.expr()
        self.expect("else")
        code = self.name()
        message = self.text()
        data = self.with_data()
        last = data.span if data is not None else message.span
        return ast.Require(guard, code, message, self.from_token(start, last), data)

    def with_data(self) -> ast.Expr | None:
        if self.kinds[self.i] != "with":
            return None
        self.i += 1
        return self.expr()

    def named_text(self) -> ast.NamedText:
        start = self.i
        keyword = self.kinds[start]
        self.i += 1
        name = self.name()
        text = self.text()
        return ast.NamedText(keyword, name, text, self.from_token(start, text.span))  # type: ignore[arg-type]

    def unhandled_decl(self) -> ast.UnhandledDecl:
        start = self.expect("unhandled")
        policy = self.name()
        return ast.UnhandledDecl(policy, self.from_token(start, policy.span))

    def migrate_decl(self) -> ast.MigrateDecl:
        start = self.expect("migrate")
        self.expect("from")
        number = self.expect("INT")
        version_span = self.token_span(number)
        self.expect("{")
        items: list[ast.MigrateMapping | ast.MigrateDrop] = []
        while True:
            kind = self.kinds[self.i]
            if kind == "}":
                self.i += 1
                break
            item_start = self.i
            self.i += 1
            if kind == "state" or kind == "field":
                old = self.dotted_name() if kind == "state" else self.name()
                self.expect("->")
                new = self.dotted_name() if kind == "state" else self.name()
                span = self.from_token(item_start, new.span)
                items.append(ast.MigrateMapping(kind, old, new, span))  # type: ignore[arg-type]
            elif kind == "drop":
                names = [self.name()]
                while self.kinds[self.i] == ",":
                    self.i += 1
                    names.append(self.name())
                span = self.from_token(item_start, names[-1].span)
                items.append(ast.MigrateDrop(tuple(names), span))
            else:
                _give_up()
        last = items[-1].span if items else version_span
        return ast.MigrateDecl(
            _int(self.texts[number]), version_span, tuple(items), self.from_token(start, last)
        )

    def invariant_decl(self) -> ast.InvariantDecl:
        start = self.expect("invariant")
        name = self.name()
        self.expect(":")
        expr = self.expr()
        return ast.InvariantDecl(name, expr, self.from_token(start, expr.span))

    # ---- tests -------------------------------------------------------------------------
    def test_decl(self) -> ast.TestDecl:
        start = self.expect("test")
        name = self.text()
        self.expect("{")
        steps: list[ast.TestStep] = []
        while self.kinds[self.i] != "}":
            steps.append(self.test_step())
        self.i += 1
        last = steps[-1].span if steps else name.span
        return ast.TestDecl(name, tuple(steps), self.from_token(start, last))

    def test_step(self) -> ast.TestStep:
        start = self.i
        kind = self.kinds[start]
        self.i += 1
        if kind == "given":
            field = self.name()
            self.expect("=")
            value = self.expr()
            return ast.Given(field, value, self.from_token(start, value.span))
        if kind == "send":
            event = self.dotted_name()
            payload = self.payload()
            last = payload[-1][1].span if payload else event.span
            child = None
            if self.kinds[self.i] == "to":
                self.i += 1
                child = self.text()
                last = child.span
            return ast.Send(event, payload, self.from_token(start, last), child)
        if kind == "goto":
            target = self.dotted_name()
            if self.kinds[self.i] == "force":
                force = self.i
                self.i += 1
                return ast.Goto(target, self.from_token(start, self.token_span(force)), True)
            return ast.Goto(target, self.from_token(start, target.span), False)
        if kind == "back":
            return ast.Back(self.token_span(start))
        if kind == "advance":
            duration = self.duration()
            return ast.Advance(duration, self.from_token(start, duration.span))
        if kind == "expect":
            return self.expect_step(start)
        _give_up()

    def expect_step(self, start: int) -> ast.TestStep:
        """`expect state S`, `expect reject CODE`, `expect journal NAME "text"`, `expect
        effect ...`, `expect no effect [NAME]` or `expect EXPR`, after the `expect` at `start`."""
        after = self.kinds[self.i]
        following = self.kinds[self.i + 1]
        if after == "state" and following != ".":
            self.i += 1
            state = self.dotted_name()
            if self.kinds[self.i] != "in":
                return ast.ExpectState(state, self.from_token(start, state.span))
            self.i += 1
            child = self.text()
            return ast.ExpectState(state, self.from_token(start, child.span), child)
        if after == "reject" and following == "NAME":
            code = self.i + 1
            self.i += 2
            ident = ast.Ident(self.texts[code], self.token_span(code))
            return ast.ExpectReject(ident, self.from_token(start, ident.span))
        if after == "journal" and following == "NAME":
            journal = self.i + 1
            self.i += 2
            ident = ast.Ident(self.texts[journal], self.token_span(journal))
            text = self.text()
            return ast.ExpectJournal(ident, text, self.from_token(start, text.span))
        if after == "effect" and following == "NAME":
            return self.expect_effect(start)
        if after == "no" and following == "effect":
            self.i += 2
            end = self.token_span(self.i - 1)
            name = None
            if self.kinds[self.i] == "NAME":
                name = ast.Ident(self.texts[self.i], self.token_span(self.i))
                end = name.span
                self.i += 1
            return ast.ExpectNoEffect(name, self.from_token(start, end))
        expr = self.expr()
        return ast.ExpectValue(expr, self.from_token(start, expr.span))

    def expect_effect(self, start: int) -> ast.ExpectEffect:
        """`expect effect NAME [(field: expr, ...)]`, after the `expect` at `start`."""
        effect = self.i + 1
        self.i += 2
        ident = ast.Ident(self.texts[effect], self.token_span(effect))
        fields = self.payload()
        last = fields[-1][1].span if fields else ident.span
        return ast.ExpectEffect(ident, fields, self.from_token(start, last))

    def payload(self) -> ast.Payload:
        """`[payload]` of a `send` or a `raise`: `(name: expr, ...)`, or nothing."""
        if self.kinds[self.i] != "(":
            return ()
        self.i += 1
        payload: list[tuple[ast.Ident, ast.Expr]] = []
        while self.kinds[self.i] != ")":
            key = self.field_name()
            self.expect(":")
            payload.append((key, self.expr()))
            if self.kinds[self.i] != ",":
                break
            self.i += 1
        self.expect(")")
        return tuple(payload)

    # ---- types -------------------------------------------------------------------------
    def type_expr(self) -> ast.TypeExpr:
        base = self.base_type()
        if self.kinds[self.i] != "?":
            return base
        mark = self.token_span(self.i)
        self.i += 1
        return ast.TypeExpr(
            base.name, base.args, True, _join(base.span, mark), base.low, base.high, base.is_range
        )

    def base_type(self) -> ast.TypeExpr:
        name = self.name()
        kind = self.kinds[self.i]
        if kind == "[":
            self.i += 1
            self.enter()
            args = [self.type_expr()]
            while self.kinds[self.i] == ",":
                self.i += 1
                args.append(self.type_expr())
            self.expect("]")
            self.depth -= 1
            return ast.TypeExpr(name, tuple(args), False, _join(name.span, args[-1].span))
        if kind == "(":
            self.i += 1
            low = self.bound() if self.kinds[self.i] != ".." else None
            dots = self.expect("..")
            high = self.bound() if self.kinds[self.i] != ")" else None
            self.expect(")")
            span = _join(name.span, self.token_span(dots))
            return ast.TypeExpr(name, (), False, span, low, high, True)
        return ast.TypeExpr(name, (), False, name.span)

    def bound(self) -> float:
        number: float = self.signed_number()
        return number

    def signed_number(self) -> Any:
        """`[MINUS] (INT | FLOAT)`, folded into one number."""
        minus = self.kinds[self.i] == "-"
        if minus:
            self.i += 1
        i = self.i
        kind = self.kinds[i]
        if kind == "FLOAT":
            number: int | float = _float(self.texts[i])
        elif kind == "INT":
            number = _int(self.texts[i])
        else:
            _give_up()
        self.i = i + 1
        return -number if minus else number

    # ---- states and rules --------------------------------------------------------------
    def state_decl(self) -> ast.StateDecl:
        kinds = self.kinds
        start = self.i
        modifiers: list[ast.Ident] = []
        while kinds[self.i] != "state":
            kind = kinds[self.i]
            if kind not in _STATE_START:
                _give_up()
            modifiers.append(ast.Ident(kind, self.token_span(self.i)))
            self.i += 1
        self.i += 1
        name = self.name()
        title = self.optional_text()
        # `final state X with {...}`: done data (any state's, as the grammar has it; resolve
        # reports one on a state that completes nothing).
        done_data = self.with_data()
        last = done_data.span if done_data is not None else (title or name).span
        body = _StateBody()
        if kinds[self.i] == "{":
            self.i += 1
            self.enter()
            while kinds[self.i] != "}":
                last = self.state_item(body)
            self.i += 1
            self.depth -= 1
        return ast.StateDecl(
            name,
            title,
            tuple(modifiers),
            tuple(body.metas),
            tuple(body.blocks),
            tuple(body.rules),
            self.from_token(start, last),
            tuple(body.unhandled),
            tuple(body.children),
            tuple(body.initial_rules),
            done_data,
            tuple(body.invokes),
        )

    def state_item(self, body: _StateBody) -> Span:
        """One item of a state's body, kept in `body`; its span."""
        kind = self.kinds[self.i]
        rule = self.state_rule(kind)
        if rule is not None:
            body.rules.append(rule)
            return rule.span
        if kind == "meta":
            body.metas.append(self.meta_decl())
            return body.metas[-1].span
        if kind == "entry" or kind == "exit":
            body.blocks.append(self.action_block())
            return body.blocks[-1].span
        if kind == "unhandled":
            body.unhandled.append(self.unhandled_decl())
            return body.unhandled[-1].span
        if kind == "initial" and self.kinds[self.i + 1] == "->":
            body.initial_rules.append(self.initial_rule())
            return body.initial_rules[-1].span
        if kind == "invoke":
            body.invokes.append(self.invoke_decl())
            return body.invokes[-1].span
        if kind in _STATE_START:
            body.children.append(self.state_decl())
        elif kind == "history":
            body.children.append(self.history_in_state())
        else:
            _give_up()
        return body.children[-1].span

    def state_rule(self, kind: str) -> ast.Rule | None:
        """The rule a state's body item starting with `kind` is, or None if it is no rule."""
        if kind == "on":
            return self.on_rule()
        if kind == "->" or kind == "if":
            return self.direct_rule()
        if kind == "after":
            return self.after_rule()
        if kind == "else":
            else_start = self.i
            self.i += 1
            return self.rule_outcome("else", else_start, None, None, (), None)
        if kind != "always":
            return None
        always = self.i
        self.i += 1
        guard = self.guard_before_arrow()
        return self.rule_outcome("always", always, None, guard, (), None)

    def guard_before_arrow(self) -> ast.Expr | None:
        """An optional `if GUARD`, which must be followed by `->` (left for the caller)."""
        guard = None
        if self.kinds[self.i] == "if":
            self.i += 1
            guard = self.expr()
        if self.kinds[self.i] != "->":
            _give_up()
        return guard

    def initial_rule(self) -> ast.InitialRule:
        """`initial -> TARGET ("," TARGET)* [do ACTIONS]` in a state body."""
        start = self.expect("initial")
        self.expect("->")
        targets = [self.target()]
        while self.kinds[self.i] == ",":
            self.i += 1
            targets.append(self.target())
        actions: tuple[ast.Action, ...] = ()
        if self.kinds[self.i] == "do":
            self.i += 1
            actions = self.actions()
        last = actions[-1].span if actions else targets[-1].span
        return ast.InitialRule(tuple(targets), actions, self.from_token(start, last))

    def invoke_decl(self) -> ast.Invoke:
        """`invoke FLOW(ARGS) [for ITEM[, INDEX] in LIST] [as ID [into FIELD]] [join all|any|N]
        [forward] [finalize do ACTIONS]`; its span ends at the last thing written."""
        kinds = self.kinds
        start = self.expect("invoke")
        flow = self.name()
        if kinds[self.i] != "(":
            _give_up()
        args = self.payload()
        last = args[-1][1].span if args else flow.span
        item = index = each = alias = join = None
        if kinds[self.i] == "for":
            self.i += 1
            item = self.name()
            if kinds[self.i] == ",":
                self.i += 1
                index = self.name()
            self.expect("in")
            each = self.expr()
            last = each.span
        into: tuple[ast.Ident, ...] = ()
        if kinds[self.i] == "as":
            self.i += 1
            alias = self.name()
            last = alias.span
            if kinds[self.i] == "into":
                self.i += 1
                into = self.lvalue()
                last = into[-1].span
        if kinds[self.i] == "join":
            join = self.join_count()
            last = join.span
        forward = kinds[self.i] == "forward"
        if forward:
            last = self.token_span(self.i)
            self.i += 1
        finalize: tuple[ast.Action, ...] = ()
        if kinds[self.i] == "finalize":
            self.i += 1
            self.expect("do")
            finalize = self.actions()
            last = finalize[-1].span
        span = self.from_token(start, last)
        return ast.Invoke(flow, args, alias, item, index, each, join, forward, finalize, into, span)

    def join_count(self) -> ast.Ident:
        """`join all|any|N` (N from 1 to the parser's bound; anything else is Lark's to report)."""
        self.expect("join")
        i = self.i
        kind = self.kinds[i]
        text = self.texts[i]
        if not (kind == "NAME" and text in ("all", "any")) and not (
            kind == "INT" and 1 <= _int(text) <= _MAX_JOIN
        ):
            _give_up()
        self.i = i + 1
        return ast.Ident(text, self.token_span(i))

    def lvalue(self) -> tuple[ast.Ident, ...]:
        """`name ("." name)*`: a context path."""
        path = [self.name()]
        while self.kinds[self.i] == ".":
            self.i += 1
            path.append(self.name())
        return tuple(path)

    def history_in_state(self) -> ast.HistoryDecl:
        """`history [deep] NAME [-> DEFAULT]` in a state body. The grammar reads the `-> X` as a
        direct rule and the AST builder makes it the history's default, with the rule's actions
        (parse.py, `_with_history_defaults`): the same here, and a default with `back` or
        `reenter` is the E003 that builder reports."""
        history = self.history_decl()
        if self.kinds[self.i] != "->":
            return history
        rule = self.direct_rule()
        if rule.back or rule.reenter or rule.target is None:
            _give_up()
        return ast.HistoryDecl(
            history.name, history.deep, rule.target, _join(history.span, rule.span), rule.actions
        )

    def meta_decl(self) -> ast.MetaDecl:
        start = self.expect("meta")
        value = self.json_object()
        return ast.MetaDecl(value, self.token_span(start))

    def action_block(self) -> ast.ActionBlock:
        start = self.i
        when = self.kinds[start]
        self.i += 1
        self.expect("do")
        actions = self.actions()
        return ast.ActionBlock(when, actions, self.from_token(start, actions[-1].span))  # type: ignore[arg-type]

    def on_rule(self) -> ast.Rule:
        start = self.expect("on")
        event = self.event_pattern()
        more: list[ast.Ident] = []
        while self.kinds[self.i] == ",":
            self.i += 1
            more.append(self.event_pattern())
        guard = None
        if self.kinds[self.i] == "if":
            self.i += 1
            guard = self.expr()
        return self.rule_outcome("on", start, event, guard, tuple(more), None)

    def direct_rule(self) -> ast.Rule:
        start = self.i
        guard = None
        if self.kinds[start] == "if":
            self.i += 1
            guard = self.expr()
        if self.kinds[self.i] != "->":
            _give_up()
        return self.rule_outcome("direct", start, None, guard, (), None)

    def after_rule(self) -> ast.Rule:
        start = self.expect("after")
        after = None
        delay = None
        if self.kinds[self.i] == "DURATION":
            after = self.duration()
        else:
            delay = self.computed_delay()
        guard = self.guard_before_arrow()
        return self.rule_outcome("after", start, None, guard, (), after, delay)

    def computed_delay(self) -> ast.ComputedDelay:
        """`EXPR UNIT`: the unit is a NAME, one of the duration units (else E213, Lark's)."""
        amount = self.expr()
        unit = self.i
        unit_ms = _DURATION_UNITS_MS.get(self.texts[unit])
        if self.kinds[unit] != "NAME" or unit_ms is None:
            _give_up()
        self.i = unit + 1
        ident = ast.Ident(self.texts[unit], self.token_span(unit))
        return ast.ComputedDelay(amount, ident, unit_ms, _join(amount.span, ident.span))

    def rule_outcome(
        self,
        kind: ast.RuleKind,
        start: int,
        event: ast.Ident | None,
        guard: ast.Expr | None,
        more: tuple[ast.Ident, ...],
        after: ast.Duration | None,
        delay: ast.ComputedDelay | None = None,
    ) -> ast.Rule:
        kinds = self.kinds
        outcome = kinds[self.i]
        if outcome == "->":
            self.i += 1
            target = self.target()
            reenter = kinds[self.i] == "reenter"
            if reenter:
                self.i += 1
            actions: tuple[ast.Action, ...] = ()
            if kinds[self.i] == "do":
                self.i += 1
                actions = self.actions()
            back = kinds[self.i] == "back"
            if back:
                self.i += 1
            last = actions[-1].span if actions else target.span
            span = self.from_token(start, last)
            return ast.Rule(
                kind, event, guard, target, actions, back, after, None, None, span,
                reenter=reenter, more_events=more, delay=delay,
            )  # fmt: skip
        if outcome == "reject" and kind == "on":
            self.i += 1
            code = self.name()
            message = self.text()
            data = self.with_data()
            last = data.span if data is not None else message.span
            span = self.from_token(start, last)
            return ast.Rule(
                kind, event, guard, None, (), False, after, code, message, span, data,
                more_events=more,
            )  # fmt: skip
        _give_up()

    def target(self) -> ast.Ident:
        """A rule's target: `self`, a state's name, or a dotted path to it."""
        i = self.i
        if self.kinds[i] == "self":
            self.i = i + 1
            return ast.Ident("self", self.token_span(i))
        return self.dotted_name()

    def dotted_name(self) -> ast.Ident:
        """A name, or a dotted path kept as one name: a state (`Cooking.Paused`) or an event
        (`error.execution`)."""
        first = self.name()
        if self.kinds[self.i] != ".":
            return first
        parts = [first]
        while self.kinds[self.i] == ".":
            self.i += 1
            parts.append(self.name())
        return ast.Ident(".".join(p.name for p in parts), _join(first.span, parts[-1].span))

    def event_pattern(self) -> ast.Ident:
        first = self.name()
        kinds = self.kinds
        if kinds[self.i] != ".":
            return first
        if kinds[self.i + 1] == "state":
            # `done.state.NAME`: a compound state's completion event (another head is E003).
            if first.name != "done":
                _give_up()
            self.i += 2
            self.expect(".")
            path = self.dotted_name()
            return ast.Ident("done.state." + path.name, _join(first.span, path.span))
        parts = [first]
        while kinds[self.i] == ".":
            self.i += 1
            if kinds[self.i] == "*":
                star = self.token_span(self.i)
                self.i += 1
                name = ".".join(p.name for p in parts) + ".*"
                return ast.Ident(name, _join(first.span, star))
            parts.append(self.name())
        return ast.Ident(".".join(p.name for p in parts), _join(first.span, parts[-1].span))

    def actions(self) -> tuple[ast.Action, ...]:
        found = [self.action()]
        while self.kinds[self.i] == ";":
            self.i += 1
            found.append(self.action())
        return tuple(found)

    def action(self) -> ast.Action:
        kinds = self.kinds
        start = self.i
        kind = kinds[start]
        if kind == "if":
            return self.if_action()
        # `raise`, `emit` and `for` may also name a field or a function: followed by a name,
        # they are the keyword (as the LALR parser, which shifts rather than reduce them to a
        # name).
        if kind == "for" and self.is_name(start + 1):
            return self.for_action()
        if kind == "send" and self.is_name(start + 1):
            return self.send_action()
        if kind == "cancel" and kinds[start + 1] in _CANCEL_ID_START:
            return self.cancel_action()
        if (kind == "raise" or kind == "emit") and self.is_name(start + 1):
            self.i = start + 1
            sent = self.dotted_name() if kind == "raise" else self.name()
            payload = self.payload()
            last = payload[-1][1].span if payload else sent.span
            span = self.from_token(start, last)
            if kind == "raise":
                return ast.RaiseAction(sent, payload, span)
            return ast.EmitAction(sent, payload, span)
        first = self.name()
        if kinds[self.i] == "(":
            self.i += 1
            args = self.arguments()
            last = args[-1].span if args else first.span
            return ast.ActionCall(first, args, _join(first.span, last))
        target = [first]
        while kinds[self.i] == ".":
            self.i += 1
            target.append(self.name())
        if kinds[self.i] == "[":
            self.i += 1
            key = self.expr()
            self.expect("]")
            self.expect("=")
            value = self.expr()
            return ast.PutAction(tuple(target), key, value, _join(first.span, value.span))
        op = kinds[self.i]
        if op != "=" and op != "+=" and op != "-=":
            _give_up()
        self.i += 1
        value = self.expr()
        return _assign(tuple(target), op, value, _join(first.span, value.span))

    def send_action(self) -> ast.SendAction:
        """`send EVENT [payload] after (DURATION | EXPR UNIT) [as EXPR] [to NAME]`, or
        `send EVENT [payload] to NAME`."""
        start = self.expect("send")
        event = self.dotted_name()
        payload = self.payload()
        if self.kinds[self.i] == "to":
            self.i += 1
            to = self.name()
            return ast.SendAction(
                event, payload, None, None, None, self.from_token(start, to.span), to
            )
        self.expect("after")
        after, delay = None, None
        if self.kinds[self.i] == "DURATION":
            after = self.duration()
        else:
            delay = self.computed_delay()
        last = after.span if after is not None else delay.span  # type: ignore[union-attr]
        ident = target = None
        if self.kinds[self.i] == "as":
            self.i += 1
            ident = self.expr()
            last = ident.span
        if self.kinds[self.i] == "to":
            self.i += 1
            target = self.name()
            last = target.span
        span = self.from_token(start, last)
        return ast.SendAction(event, payload, after, delay, ident, span, target)

    def cancel_action(self) -> ast.CancelAction:
        """`cancel ID`: a string, a name or `event.NAME`, then any `.name` (the grammar's
        `cancel_id`); a call or an index after it is Lark's to report."""
        start = self.expect("cancel")
        if self.kinds[self.i + 1] == "(":
            _give_up()
        node = self.atom()
        while self.kinds[self.i] == ".":
            self.i += 1
            attr = self.name()
            node = _attribute(node, attr, _join(node.span, attr.span))
        if self.kinds[self.i] in ("(", "["):
            _give_up()
        return ast.CancelAction(node, self.from_token(start, node.span))

    def if_action(self) -> ast.IfAction:
        """`if G { ... } (elif G { ... })* [else { ... }]`. An `else` is this action's only when
        a `{` follows it (the lexer's ELSE_BLOCK); otherwise it starts a choice state's rule."""
        kinds = self.kinds
        start = self.i
        keyword = start
        branches: list[ast.IfBranch] = []
        while True:
            self.i = keyword + 1
            guard = self.expr()
            block = self.braced_actions()
            last = block[-1].span if block else guard.span
            branches.append(ast.IfBranch(guard, block, self.from_token(keyword, last)))
            if kinds[self.i] != "elif":
                break
            keyword = self.i
        if kinds[self.i] == "else" and kinds[self.i + 1] == "{":
            keyword = self.i
            self.i += 1
            block = self.braced_actions()
            span = self.from_token(keyword, block[-1].span) if block else self.token_span(keyword)
            branches.append(ast.IfBranch(None, block, span))
        return ast.IfAction(tuple(branches), self.from_token(start, branches[-1].span))

    def for_action(self) -> ast.ForAction:
        """`for ITEM[, INDEX] in LIST { [actions] }`."""
        start = self.expect("for")
        item = self.name()
        index = None
        if self.kinds[self.i] == ",":
            self.i += 1
            index = self.name()
        self.expect("in")
        iterable = self.expr()
        block = self.braced_actions()
        last = block[-1].span if block else iterable.span
        return ast.ForAction(item, index, iterable, block, self.from_token(start, last))

    def braced_actions(self) -> tuple[ast.Action, ...]:
        """`{ [actions] }`: the actions of one branch of an `if`."""
        self.expect("{")
        self.enter()
        actions = self.actions() if self.kinds[self.i] != "}" else ()
        self.expect("}")
        self.depth -= 1
        return actions

    def quantified(self, head: ast.Expr) -> ast.Quantifier:
        """The rest of `NAME(ITEM in LIST: BODY)` after `ITEM in LIST`: a Quantifier whose name
        and span the caller (`atom`) fills in."""
        if not (type(head) is ast.Binary and head.op == "in" and type(head.left) is ast.Name):
            _give_up()  # E003, worded by the Lark path
        self.i += 1
        body = self.operand()
        self.expect(")")
        self.depth -= 1
        var = _ident(head.left.name, head.left.span)
        return ast.Quantifier(var, var, head.right, body, body.span)

    def conditional(self) -> ast.Expr:
        """`if(COND, THEN, ELSE)` (the grammar's `conditional`)."""
        start = self.i
        if self.kinds[start + 1] != "(":
            _give_up()
        self.i = start + 2
        args = self.arguments()
        if len(args) != 3:
            _give_up()  # the Lark path words the error
        return ast.Conditional(*args, self.from_token(start, args[2].span))

    def arguments(self) -> tuple[ast.Expr, ...]:
        """`[expr ("," expr)*] ")"`: a call's arguments (no trailing comma) and its `)`."""
        found = self.call_arguments()
        if isinstance(found, ast.Quantifier):
            _give_up()  # `if(x in xs: ...)`: the Lark path words the error
        return found

    def call_arguments(self) -> tuple[ast.Expr, ...] | ast.Quantifier:
        """A call's arguments and its `)`, or, after `NAME(ITEM in LIST:`, the quantifier."""
        self.enter()
        args: list[ast.Expr] = []
        if self.kinds[self.i] != ")":
            args.append(self.operand())
            if self.kinds[self.i] == ":":
                return self.quantified(args[0])
            while self.kinds[self.i] == ",":
                self.i += 1
                args.append(self.operand())
        self.expect(")")
        self.depth -= 1
        return tuple(args)

    # ---- meta JSON ---------------------------------------------------------------------
    def json_object(self) -> dict[str, Any]:
        self.expect("{")
        self.enter()
        result: dict[str, Any] = {}
        kinds = self.kinds
        while kinds[self.i] != "}":
            i = self.i
            kind = kinds[i]
            if kind == "STRING":
                key = _string(self.texts[i])
                self.i = i + 1
            else:
                key = self.name().name
            self.expect(":")
            if key in result:
                _give_up()  # E121
            result[key] = self.json_value()
            if kinds[self.i] == ",":
                self.i += 1
        self.i += 1
        self.depth -= 1
        return result

    def json_value(self) -> Any:
        i = self.i
        kind = self.kinds[i]
        if kind == "STRING":
            self.i = i + 1
            return _string(self.texts[i])
        if kind == "{":
            return self.json_object()
        if kind == "[":
            return self.json_list()
        if kind == "INT" or kind == "FLOAT" or kind == "-":
            return self.signed_number()
        if kind == "true":
            self.i = i + 1
            return True
        if kind == "false":
            self.i = i + 1
            return False
        if kind == "none" or kind == "null":
            self.i = i + 1
            return None
        _give_up()

    def json_list(self) -> list[Any]:
        """`[value, ...]` in a `meta` block (a trailing comma allowed)."""
        self.i += 1
        self.enter()
        items = self.separated(self.json_value, "]")
        self.expect("]")
        self.depth -= 1
        return items

    def separated(self, item: Callable[[], T], close: str) -> list[T]:
        """Items separated by commas up to the token `close` (left for the caller; a trailing
        comma allowed)."""
        items: list[T] = []
        if self.kinds[self.i] != close:
            items.append(item())
            while self.kinds[self.i] == ",":
                self.i += 1
                if self.kinds[self.i] == close:
                    break
                items.append(item())
        return items

    def enter(self) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            _give_up()  # E005 territory: the Lark path decides

    # ---- expressions -------------------------------------------------------------------
    def expr(self) -> ast.Expr:
        """A whole expression where a statement takes one."""
        start = self.i
        node = self.operation(OR)  # `or_test`, one call fewer
        if self.i - start > _MAX_EXPR_TOKENS:
            _give_up()  # possibly past MAX_EXPR_DEPTH (E005): the Lark path decides
        return node

    operand = expr

    def or_test(self) -> ast.Expr:
        """An expression (the grammar's `or_test`), by precedence climbing: one call per operand
        rather than one per grammar level (`or_test` down to `factor`), for the same tree."""
        return self.operation(OR)

    def operation(self, lowest: int) -> ast.Expr:
        """The operators of precedence `lowest` and tighter (runtime/operators.py): `or`, `and`,
        `not`, a comparison (one only: `a < b < c` is no expression), `+ -`, `* / %`."""
        kinds = self.kinds
        i = self.i
        left: ast.Expr
        if kinds[i] == "not" and lowest <= NOT:
            self.i = i + 1
            operand = self.operation(NOT)
            # The grammar's "not" is an anonymous token: the node's span is its operand's.
            left = _unary("not", operand, operand.span)
        elif kinds[i] == "-":
            left = self.factor()
        else:
            left = self.atom()  # `postfix`, without a call where no `.` or `[` follows
            after = kinds[self.i]
            if after == "." or after == "[":
                left = self.postfix_tail(left)
        compared = False
        while True:
            op = kinds[self.i]
            level = _PRECEDENCE.get(op)
            if level is None:
                if op != "not" or kinds[self.i + 1] != "in":
                    return left
                op = "not in"
                level = COMPARE
                self.i += 1
            if level < lowest:
                if op == "not in":
                    self.i -= 1
                return left
            if level == COMPARE:
                if compared:
                    _give_up()
                compared = True
            self.i += 1
            right = self.operation(level + 1)
            left = _binary(op, left, right, _join(left.span, right.span))

    def factor(self) -> ast.Expr:
        i = self.i
        if self.kinds[i] == "-":
            self.i = i + 1
            operand = self.factor()
            return _unary("neg", operand, self.from_token(i, operand.span))
        return self.postfix()

    def postfix(self) -> ast.Expr:
        return self.postfix_tail(self.atom())

    def postfix_tail(self, node: ast.Expr) -> ast.Expr:
        """`node` followed by any number of `.name` and `[index]`."""
        kinds = self.kinds
        while True:
            kind = kinds[self.i]
            if kind == ".":
                self.i += 1
                attr = self.name()
                node = _attribute(node, attr, _join(node.span, attr.span))
            elif kind == "[":
                self.i += 1
                self.enter()
                index = self.or_test()
                self.expect("]")
                self.depth -= 1
                node = ast.Subscript(node, index, _join(node.span, index.span))
            else:
                return node

    def atom(self) -> ast.Expr:
        i = self.i
        kind = self.kinds[i]
        if kind == "NAME" or kind in _SOFT:
            return self.name_atom(i)
        if kind == "if":
            return self.conditional()
        if kind == "event":
            return self.event_atom(i)
        if kind == "state":
            return self.state_atom(i)
        if kind in _LITERAL_TOKENS:
            return self.literal_atom(i, kind)
        if kind == "(":
            self.i = i + 1
            self.enter()
            inner = self.or_test()
            self.expect(")")
            self.depth -= 1
            return inner
        if kind == "[":
            return self.list_atom(i)
        if kind == "{":
            return self.map_atom(i)
        _give_up()

    def name_atom(self, i: int) -> ast.Expr:
        """A name, a call `f(args)` or a quantifier `any(x in xs: body)`, at token `i`."""
        line = self.lines[i]
        col = self.cols[i]
        text = self.texts[i]
        span = _new_tuple(Span, (line, col, line, col + len(text)))
        if self.kinds[i + 1] != "(":
            self.i = i + 1
            return _name(text, span)
        self.i = i + 2
        args = self.call_arguments()
        if isinstance(args, ast.Quantifier):
            q = args
            func = _ident(text, span)
            return ast.Quantifier(func, q.var, q.iterable, q.body, _join(span, q.span))
        last = args[-1].span if args else span
        return _call(_ident(text, span), args, _join(span, last))

    def event_atom(self, i: int) -> ast.Expr:
        """`event.NAME`, read from the tokens (`self.name()` would build a node to discard)."""
        kinds = self.kinds
        j = i + 2
        if kinds[i + 1] != "." or (kinds[j] != "NAME" and kinds[j] not in _FIELD_WORDS):
            _give_up()
        self.i = j + 1
        text = self.texts[j]
        end = (self.lines[j], self.cols[j] + len(text))
        return _event_field(text, _new_tuple(Span, (self.lines[i], self.cols[i], *end)))

    def state_atom(self, i: int) -> ast.Expr:
        """`state.NAME` or `state.meta.KEY`."""
        kinds = self.kinds
        if kinds[i + 1] != ".":
            _give_up()
        if kinds[i + 2] == "meta":
            if kinds[i + 3] != ".":
                _give_up()
            self.i = i + 4
            meta_key = self.name()
            return ast.StateMeta(meta_key.name, self.from_token(i, meta_key.span))
        self.i = i + 2
        field = self.name()
        return ast.StateField(field.name, self.from_token(i, field.span))

    def literal_atom(self, i: int, kind: str) -> ast.Expr:
        """A number, a string, `true`, `false` or `none`."""
        self.i = i + 1
        text = self.texts[i]
        if kind == "INT":
            return _literal(_int(text), "int", self.token_span(i))
        if kind == "FLOAT":
            return _literal(_float(text), "float", self.token_span(i))
        if kind == "STRING":
            return _literal(_string(text), "str", self.token_span(i))
        value = {"true": True, "false": False, "none": None}[kind]
        literal_kind = "none" if kind == "none" else "bool"
        return _literal(value, literal_kind, self.token_span(i))

    def list_atom(self, i: int) -> ast.Expr:
        """`[a, b, ...]` (a trailing comma allowed)."""
        self.i = i + 1
        self.enter()
        items = self.separated(self.or_test, "]")
        close = self.expect("]")
        self.depth -= 1
        return ast.ListLit(tuple(items), self.from_token(i, self.token_span(close)))

    def map_atom(self, i: int) -> ast.Expr:
        """`{key: value, ...}`."""
        kinds = self.kinds
        self.i = i + 1
        self.enter()
        entries: list[tuple[ast.Expr, ast.Expr]] = []
        while kinds[self.i] != "}":
            key = self.or_test()
            self.expect(":")
            entries.append((key, self.or_test()))
            if kinds[self.i] != ",":
                break
            self.i += 1
        close = self.expect("}")
        self.depth -= 1
        return ast.MapLit(tuple(entries), self.from_token(i, self.token_span(close)))


#: The tokens that are a literal on their own.
_LITERAL_TOKENS = frozenset({"INT", "FLOAT", "STRING", "true", "false", "none"})

#: What may follow `cancel` in a `cancel ID` action (the grammar's `cancel_id`).
_CANCEL_ID_START = frozenset({"STRING", "NAME", "event", *_SOFT})

#: What starts a state declaration: its keyword, or one of its modifiers.
_STATE_START = frozenset({"state", "initial", "final", "choice", "parallel"})

_DECLARATIONS = {
    "flow": _Parser.flow_decl,
    "version": _Parser.version_decl,
    "enum": _Parser.enum_decl,
    "type": _Parser.type_decl,
    "context": _Parser.context_decl,
    "event": _Parser.event_decl,
    "internal": _Parser.internal_event_decl,
    "message": _Parser.named_text,
    "journal": _Parser.named_text,
    "template": _Parser.named_text,
    "migrate": _Parser.migrate_decl,
    "invariant": _Parser.invariant_decl,
    "test": _Parser.test_decl,
    "unhandled": _Parser.unhandled_decl,
    "effect": _Parser.effect_decl,
    "history": _Parser.top_history,
}
