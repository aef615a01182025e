"""The tokenizer Lark's LALR parser reads `.flow` source through.

Built from the grammar's own terminal definitions (so `grammar/flow.lark` stays the one
definition of the language), but scans with a single compiled master pattern and a keyword
table, which is several times faster than Lark's general-purpose lexers on large files.

It differs from Lark's lexers in three deliberate ways:
- every keyword is always a keyword token; the grammar's `name` rule accepts the soft ones where
  a name is expected, and the hard ones are reserved everywhere (so `->` at the end of a line
  followed by `on` on the next is an error at the line end, not a transition to a state `on`);
- a character that starts no token is reported through `on_bad_character` and skipped, so the
  rest of the file is still read and checked;
- brackets nested more than `max_nesting` deep raise `NestingTooDeep`, bounding the work any
  input can cause.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator
from typing import Any

from lark import Token
from lark.lexer import Lexer, LexerState, PatternStr

_OPENING = frozenset({"LPAR", "LSQB", "LBRACE"})
_CLOSING = frozenset({"RPAR", "RSQB", "RBRACE"})
_IGNORED = "_IGNORED"


class NestingTooDeep(Exception):
    def __init__(self, token: Token) -> None:
        super().__init__("nesting too deep")
        self.token = token


BadCharacter = Callable[[str, int, int], None]  # (character, line, column)


class FlowLexer(Lexer):
    #: Lark's current custom-lexer protocol: `lex(lexer_state, parser_state)` over a TextSlice.
    __future_interface__ = 2
    max_nesting = 100

    def __init__(self, lexer_conf: Any) -> None:
        self.keywords: dict[str, str] = {}
        alternatives: list[tuple[tuple[int, int, str], str]] = []
        for terminal in lexer_conf.terminals:
            pattern = terminal.pattern
            if isinstance(pattern, PatternStr) and pattern.value.isidentifier():
                self.keywords[pattern.value] = terminal.name
                continue
            if terminal.name in lexer_conf.ignore:
                continue
            # Lark's own order: priority first, then longer patterns before their prefixes.
            order = (-terminal.priority, -pattern.max_width, terminal.name)
            alternatives.append((order, f"(?P<{terminal.name}>{pattern.to_regexp()})"))
        alternatives.sort()
        ignored = "|".join(
            f"(?:{t.pattern.to_regexp()})"
            for t in lexer_conf.terminals
            if t.name in lexer_conf.ignore
        )
        master = f"(?P<{_IGNORED}>{ignored})|" + "|".join(alt for _, alt in alternatives)
        self.pattern = re.compile(master, lexer_conf.g_regex_flags)
        self.on_bad_character: BadCharacter | None = None

    def lex(self, lexer_state: LexerState, parser_state: Any) -> Iterator[Token]:
        counter = lexer_state.line_ctr
        scan = self.scan(
            lexer_state.text.text, counter.char_pos, counter.line, counter.line_start_pos
        )
        while True:
            try:
                token = next(scan)
            except StopIteration as done:
                counter.char_pos, counter.line, counter.line_start_pos = done.value
                return
            # Keep Lark's state current: the parser resumes from it after an error.
            end_pos = token.end_pos or 0
            end_column = token.end_column or 1
            counter.char_pos, counter.column = end_pos, end_column
            counter.line = token.end_line or counter.line
            counter.line_start_pos = end_pos - end_column + 1
            lexer_state.last_token = token
            yield token

    def scan(
        self, text: str, pos: int = 0, line: int = 1, line_start: int = 0
    ) -> Generator[Token, None, tuple[int, int, int]]:
        """The tokens of `text` from `pos`; returns where it stopped (position, line, start of
        that line). The fast parse reads this directly; `lex` adds Lark's bookkeeping."""
        end = len(text)
        match_at = self.pattern.match
        keywords = self.keywords
        depth = 0
        max_nesting = self.max_nesting
        while pos < end:
            match = match_at(text, pos)
            if match is None:
                if self.on_bad_character is not None:
                    self.on_bad_character(text[pos], line, pos - line_start + 1)
                if text[pos] == "\n":
                    line += 1
                    line_start = pos + 1
                pos += 1
                continue
            kind = match.lastgroup
            value = match.group()
            start, pos = pos, match.end()
            newlines = value.count("\n")
            if kind != _IGNORED:
                assert kind is not None
                column = start - line_start + 1
                if newlines:
                    end_line = line + newlines
                    end_column = pos - (text.rfind("\n", start, pos) + 1) + 1
                else:
                    end_line, end_column = line, column + len(value)
                if kind == "NAME":
                    kind = keywords.get(value, "NAME")
                token = Token(kind, value, start, line, column, end_line, end_column, pos)
                if kind in _OPENING:
                    depth += 1
                    if depth > max_nesting:
                        raise NestingTooDeep(token)
                elif kind in _CLOSING and depth:
                    depth -= 1
                yield token
            if newlines:
                line += newlines
                line_start = text.rfind("\n", start, pos) + 1
        return pos, line, line_start
