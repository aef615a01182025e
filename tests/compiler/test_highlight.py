"""Highlighting: the Pygments lexer and the TextMate grammar know every keyword of the Lark
grammar, the committed TextMate file is the generated one, and the real `pygmentize` of the
environment highlights a seed flow through the `flow` entry point."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pygments.token import Error, Keyword, Name, Operator

from flowc.compiler import highlight
from flowc.compiler.pygments_lexer import FlowPygmentsLexer

ROOT = Path(__file__).resolve().parents[2]
TEXTMATE = ROOT / "grammar" / "flow.tmLanguage.json"
SEEDS = sorted((ROOT / "flows").glob("*.flow"))
sys.path.insert(0, str(ROOT / "tests" / "docs"))
from test_language_examples import blocks  # noqa: E402

DOC_FLOWS = [
    b for page in sorted((ROOT / "docs").glob("*.md")) for b in blocks(page) if b.tag == "flow"
]


def grammar_keywords() -> set[str]:
    """The keywords of grammar/flow.lark, read independently of highlight.py: every quoted word
    of the grammar file (terminal definitions such as `FLOW: "flow"` and the anonymous keywords
    of rules such as `"and"`)."""
    text = (ROOT / "grammar" / "flow.lark").read_text(encoding="utf-8")
    code = "\n".join(line.split("//")[0] for line in text.splitlines())
    return set(re.findall(r'"([a-z_]+)"', code))


def test_the_highlighters_read_exactly_the_grammars_keywords() -> None:
    keywords = grammar_keywords()
    assert len(keywords) > 30  # the extraction itself works
    assert highlight.grammar_keywords() == keywords
    by_role = highlight.keywords()
    assert sorted(w for words in by_role.values() for w in words) == sorted(keywords)


def test_every_role_names_only_keywords() -> None:
    # A word dropped from the grammar must not stay coloured as a keyword.
    assert sorted(set(highlight.ROLES) - grammar_keywords()) == []


def test_a_keyword_with_no_role_yet_is_still_coloured_as_a_keyword(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    grown = highlight.grammar_keywords() | {"invariant"}
    monkeypatch.setattr(highlight, "grammar_keywords", lambda: grown)
    highlight.keywords.cache_clear()
    try:
        assert "invariant" in highlight.keywords()[highlight.Role.CONTROL]
        patterns = highlight.textmate_grammar()["patterns"]
        assert any(
            p.get("name") == "keyword.control.flow" and re.fullmatch(p["match"], "invariant")
            for p in patterns
        )
    finally:
        highlight.keywords.cache_clear()


@pytest.mark.parametrize("word", sorted(grammar_keywords()))
def test_pygments_colours_every_keyword_as_one(word: str) -> None:
    tokens = [(t, v) for t, v in FlowPygmentsLexer().get_tokens(f"{word} ") if v.strip()]
    assert len(tokens) == 1 and tokens[0][1] == word
    assert tokens[0][0] in Keyword or tokens[0][0] in Operator.Word


def _textmate() -> dict[str, object]:
    data: dict[str, object] = json.loads(TEXTMATE.read_text(encoding="utf-8"))
    return data


def _keyword_scope(scope: str) -> bool:
    return scope.split(".")[0] in ("keyword", "storage") or scope.startswith("constant.language")


@pytest.mark.parametrize("word", sorted(grammar_keywords()))
def test_the_textmate_grammar_colours_every_keyword_as_one(word: str) -> None:
    patterns = _textmate()["patterns"]
    assert isinstance(patterns, list)
    # The first pattern that matches the word alone decides its scope, as in an editor.
    for pattern in patterns:
        if "match" in pattern and re.fullmatch(pattern["match"], word):
            assert _keyword_scope(pattern.get("name", "")), (word, pattern)
            return
    pytest.fail(f"no pattern of {TEXTMATE.name} matches `{word}`")


def test_the_committed_textmate_grammar_is_the_generated_one() -> None:
    assert TEXTMATE.read_text(encoding="utf-8") == highlight.textmate_json(), (
        "regenerate it: python -m flowc.compiler.highlight > grammar/flow.tmLanguage.json"
    )


def test_the_textmate_grammar_names_declared_things() -> None:
    patterns = _textmate()["patterns"]
    assert isinstance(patterns, list)
    scopes: list[str] = []
    text = "initial state UNDERSTAND"
    position = 0
    while position < len(text):
        for pattern in patterns:
            found = "match" in pattern and re.compile(pattern["match"]).match(text, position)
            if found:
                for group, capture in pattern.get("captures", {}).items():
                    scopes.append(f"{found.group(int(group))}={capture['name']}")
                if "name" in pattern:
                    scopes.append(f"{found.group()}={pattern['name']}")
                position = found.end()
                break
        else:
            position += 1
    assert scopes == [
        "initial=storage.modifier.flow",
        "state=storage.type.flow",
        "UNDERSTAND=entity.name.type.flow",
    ]


@pytest.mark.parametrize(
    "text",
    [p.read_text(encoding="utf-8") for p in SEEDS] + [b.text for b in DOC_FLOWS],
    ids=[p.stem for p in SEEDS] + [b.id for b in DOC_FLOWS],
)
def test_pygments_reads_every_flow_of_the_repository_without_an_error_token(text: str) -> None:
    tokens = list(FlowPygmentsLexer().get_tokens(text))
    assert [v for t, v in tokens if t in Error] == []
    assert "".join(v for _, v in tokens) == text if text.endswith("\n") else text + "\n"


def test_pygments_tells_declarations_names_and_soft_keywords_apart() -> None:
    text = "context { type: int = 0 }\nevent go\ninitial state A { on go if type > 0 -> B }\n"
    kinds = {v: t for t, v in FlowPygmentsLexer().get_tokens(text) if v.strip()}
    assert kinds["A"] in Name.Class and kinds["B"] in Name.Class
    assert kinds["go"] in Name.Function
    assert kinds["state"] in Keyword.Declaration and kinds["initial"] in Keyword


def test_pygmentize_highlights_a_seed_flow_through_the_entry_point() -> None:
    pygmentize = Path(sys.executable).parent / "pygmentize"
    seed = ROOT / "flows" / "attempt_v2.flow"
    done = subprocess.run(
        [str(pygmentize), "-l", "flow", "-f", "html", str(seed)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert '<span class="kd">state</span>' in done.stdout
    assert '<span class="nc">UNDERSTAND</span>' in done.stdout
    assert 'class="err"' not in done.stdout
    # The file name alone picks the lexer too.
    done = subprocess.run([str(pygmentize), "-N", str(seed)], capture_output=True, text=True)
    assert done.stdout.strip() == "flow"
