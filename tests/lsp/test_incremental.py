"""Re-parsing only the edited declaration gives exactly the module a full parse gives."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from flowc.compiler import ast
from flowc.compiler.lsp.incremental import reparse
from flowc.compiler.parse import parse_source

FLOWS = sorted((Path(__file__).parents[2] / "flows").glob("*.flow"))


def parsed(text: str) -> ast.Module:
    result = parse_source(text)
    assert result.module is not None and not result.diagnostics
    return result.module


@pytest.mark.parametrize("path", FLOWS, ids=lambda p: p.name)
def test_a_one_line_edit_reparses_to_the_full_parse(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    module = parsed(text)
    lines = text.split("\n")
    rng = random.Random(path.name)
    reused = 0
    for _ in range(25):
        row = rng.randrange(len(lines))
        edited = list(lines)
        # Edits that keep the text valid: rename a word throughout one line, or add a comment.
        words = [w for w in lines[row].replace("(", " ").split() if w.isidentifier()]
        if words and rng.random() < 0.5:
            word = rng.choice(words)
            edited[row] = lines[row].replace(word, word + "x", 1)
        else:
            edited[row] = lines[row] + "  # edited"
        new_text = "\n".join(edited)
        full = parse_source(new_text)
        spliced = reparse(text, module, new_text)
        if spliced is None:
            continue
        reused += 1
        assert not full.diagnostics, (row, edited[row])
        assert spliced == full.module, (row, edited[row])
    assert reused > 5


def test_edits_it_cannot_localise_fall_back_to_a_full_parse() -> None:
    text = "flow demo\nevent go\ninitial state A {\n  on go -> B\n}\nfinal state B\n"
    module = parsed(text)
    assert reparse(text, module, text.replace("}\n", "}\n\n")) is None  # a line added
    assert reparse(text, module, text.replace("on go", "on go {")) is None  # does not parse
    assert reparse(text, module, text.replace("flow demo", "flow demox")) is not None
    joined = "flow demo\nevent go\ninitial state A { on go -> B } final state B\n"
    assert reparse(joined, parsed(joined), joined.replace("go -> B", "go -> A")) is None
    changed = reparse(text, module, text.replace("on go -> B", "on go -> A"))
    assert changed == parsed(text.replace("on go -> B", "on go -> A"))
