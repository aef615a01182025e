"""A Pygments lexer for `.flow` source, registered as the `flow` lexer (entry point
`pygments.lexers`), so that `pygmentize -l flow FILE` and any Pygments-based documentation tool
highlight flows. Built from the word table and patterns of `highlight.py`; needs the optional
extra `highlight` (Pygments)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, cast

from pygments.lexer import RegexLexer, bygroups
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Whitespace,
    _TokenType,
)

from flowc.compiler import highlight as hl

_Rules = list[Any]
#: Pygments' `bygroups`, which its stubs leave untyped.
_groups = cast(Callable[..., object], bygroups)


def _text(quote: str, token: _TokenType) -> _Rules:
    """The inside of a string: escapes, template expressions, the closing quote."""
    stop = quote[0] + ("\\n" if len(quote) == 1 else "")
    plain = rf"[^\\{{{stop}]+"
    return [
        (hl.ESCAPE, String.Escape),
        (hl.TEMPLATE, String.Interpol),
        (quote, token, "#pop"),
        (plain, token),
        (rf"[\\{{{quote[0]}]", token),  # a lone backslash or brace, a quote inside a triple string
    ]


_TOKEN_OF_ROLE = {
    hl.Role.DECLARATION: Keyword.Declaration,
    hl.Role.MODIFIER: Keyword.Type,
    hl.Role.CONTROL: Keyword,
    hl.Role.OPERATOR: Operator.Word,
    hl.Role.CONSTANT: Keyword.Constant,
}


class FlowPygmentsLexer(RegexLexer):
    name = "flow"
    aliases: ClassVar[list[str]] = ["flow", "flowc"]
    filenames: ClassVar[list[str]] = ["*.flow"]
    mimetypes: ClassVar[list[str]] = ["text/x-flow"]

    tokens: ClassVar[dict[str, _Rules]] = {
        "root": [
            (r"\s+", Whitespace),
            (hl.COMMENT, Comment.Single),
            ('"""', String.Double, "long_string"),
            ('"', String.Double, "double_string"),
            ("'", String.Single, "single_string"),
            (hl.DURATION, Number),
            (r"[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?", Number.Float),
            (r"[0-9]+", Number.Integer),
            (rf"(\.)(\s*)({hl.NAME})", _groups(Punctuation, Whitespace, Name.Attribute)),
            (rf"({hl.NAME})(\s*)(:)", _groups(Name.Attribute, Whitespace, Punctuation)),
            (
                rf"\b({'|'.join(hl.NAMES_A_TYPE)})(\s+)({hl.NAME})",
                _groups(Keyword.Declaration, Whitespace, Name.Class),
            ),
            (rf"(->)(\s*)(?!self\b)({hl.NAME})", _groups(Operator, Whitespace, Name.Class)),
            (
                rf"\b(event)(\s+)({hl.NAME})",
                _groups(Keyword.Declaration, Whitespace, Name.Function),
            ),
            (rf"\b(on)(\s+)({hl.NAME})", _groups(Keyword, Whitespace, Name.Function)),
            *(
                (hl.word_pattern(words), _TOKEN_OF_ROLE[role])
                for role, words in hl.keywords().items()
                if words
            ),
            (hl.OPERATORS, Operator),
            (rf"({hl.NAME})(?=\s*\()", Name.Function),
            (hl.NAME, Name),
            (r"[{}()\[\],;:.]", Punctuation),
        ],
        "long_string": _text('"""', String.Double),
        "double_string": [(r"\n", String.Double, "#pop"), *_text('"', String.Double)],
        "single_string": [(r"\n", String.Single, "#pop"), *_text("'", String.Single)],
    }
