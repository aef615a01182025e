"""The fast front end against the Lark parser: on every text, either `fastparse` leaves it to
Lark (None), or it builds exactly the AST Lark builds, spans included, for a text Lark finds no
fault with. Checked on every flow in the repository, every flow-like string in the tests and
docs, generated valid flows in random layouts, and generated broken ones."""

from __future__ import annotations

import ast as python_ast
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from formatting import scrambled
from hypothesis import given, settings
from hypothesis import strategies as st
from test_format_property import flows

from flowc.compiler import fastparse
from flowc.compiler.parse import parse_source

ROOT = Path(__file__).resolve().parents[2]


def agrees_with_lark(text: str) -> bool:
    """Assert the two parsers agree on `text`; True when the fast one parsed it."""
    fast = fastparse.parse_module(text)
    reference = parse_source(text, fast_path=False)
    if fast is not None:
        assert reference.diagnostics == [], "fastparse accepted a text Lark rejects"
        assert reference.module == fast
    # What callers see is Lark's answer either way.
    assert parse_source(text) == reference
    return fast is not None


def corpus() -> list[tuple[str, str]]:
    """(where, text) of every flow in the repository: .flow files, ```flow blocks of the docs,
    and every string constant in the tests that looks like a flow (valid or not)."""
    found: list[tuple[str, str]] = []
    skip = {".venv", ".git", "build"}
    for path in sorted(ROOT.rglob("*.flow")):
        if not skip & set(path.relative_to(ROOT).parts):
            found.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        blocks = re.findall(r"```flow\n(.*?)```", path.read_text(encoding="utf-8"), re.S)
        found += [(f"{path.name} block {i}", block) for i, block in enumerate(blocks)]
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = python_ast.parse(path.read_text(encoding="utf-8"))
        for node in python_ast.walk(tree):
            if (
                isinstance(node, python_ast.Constant)
                and isinstance(node.value, str)
                and re.search(r"\bstate\b", node.value)
            ):
                found.append((f"{path.name}:{node.lineno}", node.value))
    return found


def test_every_flow_in_the_repository_parses_the_same() -> None:
    texts = corpus()
    assert len(texts) > 300
    fast = [where for where, text in texts if agrees_with_lark(text)]
    # The fast path is really taken: by every seed flow, and by a good share of the rest
    # (the corpus also holds fragments and broken texts, and flows in the statechart and
    # action syntax that fastparse hands to Lark).
    seeds = {f"flows/{p.name}" for p in (ROOT / "flows").glob("*.flow")}
    assert seeds and seeds <= set(fast)
    assert len(fast) > len(texts) * 2 // 5


@settings(max_examples=150, deadline=None)
@given(flows(), st.randoms(use_true_random=False))
def test_generated_flows_in_any_layout_take_the_fast_path(text: str, rng: random.Random) -> None:
    assert agrees_with_lark(text)
    assert agrees_with_lark(scrambled(text, rng))


#: Pieces a slip of the keyboard, or a language the parser does not know, could leave.
DEBRIS = [
    "{", "}", "(", ")", "[", "]", ",", ";", ":", ".", "->", "=", "==", "-", "?", "..", "*",
    "on", "if", "do", "else", "state", "event", "not", "in", "self", "back", "reenter", "with",
    "meta", "after", "5m", "1.5", "7", '"s"', "'q'", '"""x"""', "x", "#", "\n", " ", "$", "é",
    "\\", '"', "always", "raise", "emit", "effect", "parallel", "history",
]  # fmt: skip


@st.composite
def broken(draw: st.DrawFn) -> str:
    text = draw(flows())
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        how = draw(st.integers(0, 2))
        if how == 0:  # lose a few characters
            text = text[:at] + text[at + draw(st.integers(1, 6)) :]
        elif how == 1:  # gain a token
            text = text[:at] + draw(st.sampled_from(DEBRIS)) + text[at:]
        else:  # a token with spaces around it
            text = text[:at] + " " + draw(st.sampled_from(DEBRIS)) + " " + text[at:]
    return text


@settings(max_examples=300, deadline=None)
@given(broken())
def test_broken_flows_get_the_lark_answer(text: str) -> None:
    agrees_with_lark(text)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('flow t "bad \\q escape"\ninitial state A\n', "E007"),
        ("flow t\ncontext { n: int = 99999999999999999999 }\ninitial state A\n", "E209"),
        ("flow t\ninitial state A { meta { k: 1, k: 2 } }\n", "E121"),
        ("flow t\ncontext { n: int = " + "(" * 120 + "1" + ")" * 120 + " }\n", "E005"),
        ("flow t\ncontext { n: int = " + "1+" * 300 + "1 }\ninitial state A\n", "E005"),
        ("flow t\ninitial state A { on go ~ -> A }\n", "E002"),
        ("flow t\ninitial state A { on error./ -> A }\n", "E003"),
    ],
)
def test_what_lark_reports_is_left_to_lark(text: str, code: str) -> None:
    assert fastparse.parse_module(text) is None
    assert code in {d.code for d in parse_source(text).diagnostics}
    agrees_with_lark(text)


def test_a_keyword_the_parser_does_not_know_sends_the_file_to_lark(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = "flow t\nevent go\ninitial state A { on go -> someday }\nstate someday\n"
    assert fastparse.parse_module(text) is not None
    words, soft = fastparse._grammar_words()
    monkeypatch.setattr(fastparse, "_grammar_words", lambda: (words | {"someday"}, soft))
    fastparse._kinds.cache_clear()
    try:
        assert fastparse.parse_module(text) is None
        # A soft keyword the grammar made reserved is no name here either.
        monkeypatch.setattr(fastparse, "_grammar_words", lambda: (words, soft - {"with"}))
        fastparse._kinds.cache_clear()
        assert fastparse.parse_module("flow t\ncontext { with: int }\ninitial state A\n") is None
    finally:
        fastparse._kinds.cache_clear()


def test_the_fast_path_never_loads_the_grammar_into_lark() -> None:
    flow = ROOT / "flows" / "attempt_v2.flow"
    code = (
        "import sys; from flowc.compiler.parse import parse_source, flow_parser;"
        f"r = parse_source(open({str(flow)!r}).read());"
        "assert r.module is not None and not r.diagnostics;"
        "print(flow_parser.cache_info().currsize)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"
