"""What the formatter tests compare: a flow's meaning, and a random layout of the same tokens."""

from __future__ import annotations

import random
import re

from flowc.compiler import compile_source
from flowc.compiler.lexer import FlowLexer
from flowc.compiler.parse import flow_parser
from flowc.runtime.model import CompiledFlow


def _lexer() -> FlowLexer:
    return FlowLexer(flow_parser().lexer_conf)


def meaning(flow: CompiledFlow) -> str:
    """The IR content hash with the source positions (line, column of each state and rule)
    zeroed: what a flow means, wherever its lines are."""
    states = tuple(s.model_copy(update={"line": 0, "column": 0}) for s in flow.states)
    rules = tuple(t.model_copy(update={"line": 0, "column": 0}) for t in flow.transitions)
    return flow.model_copy(update={"states": states, "transitions": rules}).compute_hash()


def compiled(text: str) -> CompiledFlow:
    result = compile_source(text, "x.flow", lint=False)
    assert result.flow is not None, [d.message for d in result.diagnostics]
    return result.flow


#: Whitespace and comments any two tokens may be separated by without changing the file.
SEPARATORS = (" ", " ", " ", "  ", "\t", "\n", "\n", "\n\n\n", "  # a note\n", "\n  # own line\n")


def scrambled(text: str, rng: random.Random) -> str:
    """The tokens of `text` (comments dropped) joined by random whitespace and comments."""
    tokens = [t.value for t in _lexer().scan(text)]
    out = [rng.choice(("", "\n", "# leading\n"))]
    for token in tokens:
        out.append(token)
        out.append(rng.choice(SEPARATORS))
    return "".join(out)


_GAP_PART = re.compile(r"#[^\n]*|\n|[ \t\r\f]+")


def respaced(text: str, rng: random.Random) -> str:
    """`text` with the same tokens, comments and line breaks, but random spaces and tabs
    between tokens (also where there were none), and runs of blank lines made longer."""
    out: list[str] = []
    position = 0
    for token in [*_lexer().scan(text), None]:
        end = len(text) if token is None else token.start_pos or 0
        gap = text[position:end]
        parts = [p.group() for p in _GAP_PART.finditer(gap)]
        if not parts:
            parts = [rng.choice(["", " ", "\t"])]
        after_newline = False
        for part in parts:
            if part.startswith("#"):
                out.append(part)
            elif part == "\n":
                out.append(rng.choice(["\n", " \n", "\t\n"]))
                if after_newline:  # a blank line: make it three
                    out.append("\n\t\n")
            else:
                out.append(rng.choice([" ", "   ", "\t", "\t "]))
            after_newline = part == "\n" or (after_newline and not part.startswith("#"))
        if token is not None:
            out.append(token.value)
            position = token.end_pos or 0
    return "".join(out)
