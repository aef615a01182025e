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
    return compared(text)[0]


def compared(text: str) -> tuple[bool, bool]:
    """Assert the two parsers agree on `text`; (the fast one parsed it, Lark found no fault)."""
    fast = fastparse.parse_module(text)
    reference = parse_source(text, fast_path=False)
    if fast is not None:
        assert reference.diagnostics == [], "fastparse accepted a text Lark rejects"
        assert reference.module == fast
    # What callers see is Lark's answer either way.
    assert parse_source(text) == reference
    return fast is not None, not reference.diagnostics


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
    outcomes = {where: compared(text) for where, text in texts}
    fast = {where for where, (parsed, _) in outcomes.items() if parsed}
    # The fast path is really taken: by every seed flow and example (statecharts included),
    # and by every other text Lark finds no fault with (the corpus also holds fragments and
    # broken texts, which Lark reports on), unless it uses a keyword this parser was not
    # written for (syntax added to the grammar since, which Lark reads until it learns it).
    seeds = {str(p.relative_to(ROOT)) for p in (ROOT / "flows").rglob("*.flow")}
    assert {"flows/examples/microwave.flow", "flows/collab_skills.flow"} <= seeds
    assert seeds <= fast
    by_name = dict(texts)
    clean = {where for where, (_, ok) in outcomes.items() if ok}
    left_to_lark = sorted(where for where in clean - fast if not unknown_words(by_name[where]))
    assert left_to_lark == []
    assert len(fast) > len(texts) * 2 // 5


def unknown_words(text: str) -> set[str]:
    """The words of `text` the grammar makes keywords that the fast parser does not know."""
    kinds = fastparse._kinds()
    words = {token for _, token in fastparse._TOKEN.findall(text)}
    return {word for word in words if kinds.get(word) == fastparse._UNKNOWN}


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
    "\\", '"', "always", "raise", "emit", "effect", "parallel", "history", "for", "initial",
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


# ---- statecharts -------------------------------------------------------------------------------
#: Statements the generated statecharts draw from: every piece of the statechart and action
#: syntax, including the words that are keywords in one place and names in another.
GUARDS = ["n > 0", "flag", "not flag and n in [1, 2]", "state.meta.k == 1", "event.k != 2"]
TARGETS = ["A", "B1", "A.B1", "P.R1.X", "self", "Done"]
PATTERNS = ["go", "go, stop", "error.*", "error.timeout", "done.state.A", "go, error.*"]
DELAYS = ["5m", "30s", "n ms", "2 * n s", "backoff(n) h", "(n + 1) d"]
DONE_DATA = ['{"amount": n, "ok": true}', "{}", "n + 1", "for", "with"]


@st.composite
def chart_actions(draw: st.DrawFn, depth: int = 0) -> str:
    pool = [
        "n = n + 1",
        "n += 1",
        "log(n)",
        "raise go",
        "raise go(k: n + 1)",
        "raise error.timeout()",
        "raise go(k: 1,)",
        "emit ping",
        'emit notify(msg: "x", n: n)',
        "raise = 1",  # a field called `raise`
        "emit(n)",  # a function called `emit`
        "elif.x -= 2",
        "for = 1",  # a field called `for`
        "for.x += 1",
        "for(n)",  # a function called `for`
    ]
    found = []
    for _ in range(draw(st.integers(1, 2))):
        if depth < 2 and draw(st.integers(0, 3)) == 0:
            text = f"if {draw(st.sampled_from(GUARDS))} {{ {draw(chart_actions(depth + 1))} }}"
            for _ in range(draw(st.integers(0, 2))):
                block = draw(st.sampled_from(["", draw(chart_actions(depth + 1))]))
                text += f" elif {draw(st.sampled_from(GUARDS))} {{ {block} }}"
            if draw(st.booleans()):
                block = draw(st.sampled_from(["", draw(chart_actions(depth + 1))]))
                text += f" else {{ {block} }}"
            found.append(text)
        elif depth < 2 and draw(st.integers(0, 4)) == 0:
            head = draw(st.sampled_from(["x", "x, i", "for, in_", "item"]))
            items = draw(st.sampled_from(["[1, 2]", "event.lines", "xs", "for", "a + [n]"]))
            block = draw(st.sampled_from(["", draw(chart_actions(depth + 1))]))
            found.append(f"for {head} in {items} {{ {block} }}")
        else:
            found.append(draw(st.sampled_from(pool)))
    return "; ".join(found)


@st.composite
def arrow(draw: st.DrawFn) -> str:
    text = f"-> {draw(st.sampled_from(TARGETS))}"
    if draw(st.integers(0, 3)) == 0:
        text += " reenter"
    if draw(st.booleans()):
        text += f" do {draw(chart_actions())}"
    if draw(st.integers(0, 4)) == 0:
        text += " back"
    return text


@st.composite
def chart_state(draw: st.DrawFn, name: str, depth: int) -> str:
    modifiers = draw(
        st.sampled_from(["", "initial ", "final ", "parallel ", "initial parallel ", "choice "])
    )
    head = f"{modifiers}state {name}"
    if draw(st.booleans()):
        head += f' "{name}, titled"'
    if draw(st.integers(0, 3)) == 0:
        head += f" with {draw(st.sampled_from(DONE_DATA))}"
    if draw(st.integers(0, 4)) == 0:
        return head
    body: list[str] = []
    for index in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 11))
        guard = f" if {draw(st.sampled_from(GUARDS))}" if draw(st.booleans()) else ""
        if kind == 0:
            body.append(f"on {draw(st.sampled_from(PATTERNS))}{guard} {draw(arrow())}")
        elif kind == 1:
            body.append(f"always{guard} {draw(arrow())}")
        elif kind == 2:
            body.append(f"after {draw(st.sampled_from(DELAYS))}{guard} {draw(arrow())}")
        elif kind == 3 and depth < 2:
            body.append(draw(chart_state(f"{name}{index}", depth + 1)))
        elif kind == 4:
            deep = "deep " if draw(st.booleans()) else ""
            default = f" -> {draw(st.sampled_from(TARGETS[:4]))}" if draw(st.booleans()) else ""
            if default and draw(st.booleans()):
                default += f" do {draw(chart_actions())}"
            body.append(f"history {deep}H{index}{default}")
        elif kind == 5:
            body.append(f"{draw(st.sampled_from(['entry', 'exit']))} do {draw(chart_actions())}")
        elif kind == 6:
            body.append(f"unhandled {draw(st.sampled_from(['ignore', 'refuse']))}")
        elif kind == 7:
            body.append(f"if {draw(st.sampled_from(GUARDS))} {draw(arrow())}")
        elif kind == 8:
            body.append(f"else {draw(arrow())}")
        elif kind == 9:
            body.append(f'on go{guard} reject busy "Busy in {name}."')
        elif kind == 10:
            body.append('meta { k: 1, tags: ["a"] }')
        else:
            targets = ", ".join(draw(st.lists(st.sampled_from(TARGETS), min_size=1, max_size=3)))
            actions = f" do {draw(chart_actions())}" if draw(st.booleans()) else ""
            body.append(f"initial -> {targets}{actions}")
    inner = "\n".join(f"  {line}" for line in "\n".join(body).split("\n"))
    return f"{head} {{\n{inner}\n}}" if body else f"{head} {{}}"


@st.composite
def charts(draw: st.DrawFn) -> str:
    """A statechart that Lark parses without fault (its meaning is not checked: resolve and the
    typechecker would find plenty wrong)."""
    lines = [
        "flow chart",
        "context { n: int = 0, flag: bool = false }",
        "event go(k: int = 0)",
        "event stop",
        "event error.timeout",
        "effect ping",
        "effect notify(msg: str, n: int = 0)",
    ]
    if draw(st.booleans()):
        lines.append("unhandled ignore")
    lines += [draw(chart_state(name, 0)) for name in ("A", "P", "Done")]
    if draw(st.integers(0, 3)) == 0:
        lines.append("history H -> A")  # out of place (E131, from resolve), but it parses
    if draw(st.booleans()):
        lines.append("migrate from 1 {\n  state A.B1 -> P.R1\n  field n -> m\n}")
    if draw(st.booleans()):
        lines.append('test "t" {\n  goto A.B1 force\n  send go(k: 1)\n  expect state P.R1.X\n}')
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None)
@given(charts(), st.randoms(use_true_random=False))
def test_generated_statecharts_in_any_layout_take_the_fast_path(
    text: str, rng: random.Random
) -> None:
    assert agrees_with_lark(text)
    assert agrees_with_lark(scrambled(text, rng))


@settings(max_examples=300, deadline=None)
@given(charts(), st.data())
def test_broken_statecharts_get_the_lark_answer(text: str, data: st.DataObject) -> None:
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text)))
        if data.draw(st.booleans()):
            text = text[:at] + text[at + data.draw(st.integers(1, 6)) :]
        else:
            text = text[:at] + " " + data.draw(st.sampled_from([*DEBRIS, "deep", "{}"])) + text[at:]
    agrees_with_lark(text)


@pytest.mark.parametrize(
    "text",
    [
        # A history's default on the next line, after a comment; then a direct rule of the state.
        "flow t\nstate P {\n  initial state A\n  history H\n  # resume\n  -> A\n  -> A\n}\n",
        "flow t\nstate P { history deep H -> P.A if n > 0 -> A initial state A }\n",
        # `else {` continues an `if`; `else ->` is the choice state's next rule.
        "flow t\nchoice state C {\n  -> A do if x { n = 1 } else { n = 2 }\n  else -> B\n}\n",
        "flow t\nchoice state C {\n  -> A do if x { n = 1 }\n  else -> B\n}\n",
        "flow t\nstate A { entry do if a { } elif b { } else # why\n { } }\n",
        # `raise` and `emit` as keywords, and as names.
        "flow t\nstate A { entry do raise go.now(k: 1); emit = 2; raise(3); emit ping }\n",
        "flow t\nstate A { on done.state.A.B, error.* if n > 0 -> A.B reenter }\n",
        "flow t\nstate A { after backoff_ms * 2 ms if n < 5 -> self reenter do n += 1 }\n",
        "flow t\nparallel state P { state R1 { initial state X } state R2 { initial state Y } }\n",
        "flow t\nhistory deep H -> A.B\n",
        'flow t\neffect notify(msg: str = "x",)\neffect ping()\n',
        'flow t\ntest "t" { goto A.B force expect state A.B }\nmigrate from 1 { state A.B -> C }\n',
        # Done data, with a body after it or not; `with` is also a name.
        'flow t\nstate P { final state Paid with {"amount": total, "ok": true} }\n',
        'flow t\nfinal state Paid "Paid" with {"n": n}\n{\n  entry do n = 1\n}\nstate B\n',
        "flow t\nfinal state with with with {}\nfinal state D with {} { on go -> A }\n",
        # Initial rules, among the states they lead into.
        'flow t\nstate P {\n  initial -> A.B, C.D do append(log, "x"); n = 1\n'
        "  initial state A { initial state B }\n  state C { initial state D }\n}\n",
        "flow t\nparallel state P { initial -> self initial -> R1.X state R1 { state X } }\n",
        # A history's default with actions, wherever the line breaks; then a direct rule.
        'flow t\nstate P {\n  history H -> B do append(log, "x")\n  -> A do n = 1\n}\n',
        "flow t\nstate P { history deep H\n # why\n -> P.A do if x { n = 1 }; raise go -> B }\n",
        # `for` loops, and `for` as a field, a function, a loop variable and a list.
        "flow t\nstate A { entry do for x, i in event.lines { total += x.qty; if i == 0 { } } }\n",
        "flow t\nstate A { entry do for x in xs { }; for = 1; for.y += 2; for(3) }\n",
        "flow t\ncontext { for: list[int] }\nstate A { entry do for for in for { n = for } }\n",
        "flow t\nstate A { -> B do for x in a in b { for y in [x] { emit p(n: y) } } }\n",
    ],
)
def test_statechart_syntax_takes_the_fast_path(text: str) -> None:
    assert agrees_with_lark(text)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("flow t\nstate P {\n  history H\n  -> A back\n}\n", "E003"),
        ("flow t\nstate P {\n  history H -> A do n = 1 back\n}\n", "E003"),
        ("flow t\nstate P {\n  history H -> A reenter do n = 1\n}\n", "E003"),
        ("flow t\nhistory H -> A do n = 1\n", "E003"),
        ("flow t\nstate P { initial -> A back }\n", "E003"),
        ("flow t\nstate P { initial -> A, }\n", "E003"),
        ("flow t\nstate P { initial -> A if n > 0 }\n", "E003"),
        ("flow t\ninitial -> A\n", "E003"),
        ("flow t\nfinal state P with\n", "E004"),
        ('flow t\nfinal state P with {"a": 1} {"b": 2}\n', "E003"),
        ("flow t\nstate A { entry do for x in xs n = 1 }\n", "E003"),
        ("flow t\nstate A { entry do for x i in xs { } }\n", "E003"),
        ("flow t\nstate A { entry do for x, in xs { } }\n", "E003"),
        ("flow t\nstate A { entry do for x in { } }\n", "E003"),
        ("flow t\nstate A { after n weeks -> A }\n", "E213"),
        ("flow t\nstate A { on error.state.A -> A }\n", "E003"),
        ("flow t\nstate A { on go -> A do if x { n = 1 } else { } else { } }\n", "E003"),
    ],
)
def test_statechart_faults_are_left_to_lark(text: str, code: str) -> None:
    assert fastparse.parse_module(text) is None
    assert code in {d.code for d in parse_source(text).diagnostics}
    agrees_with_lark(text)


@pytest.mark.parametrize(
    "text",
    [
        # `event.NAME` is read straight from the tokens: soft keywords as field names, a
        # postfix after it, spaces and comments inside it.
        "flow t\nstate A { on go if event.type == event.message.x[0] and event . # c\n"
        " version > 1 -> A }\n",
        "flow t\nstate A { on go if -event.n < 2 and not event.ok -> A do n = event.n }\n",
        # Columns after a triple-quoted string that spans lines, on its last line.
        'flow t\nmessage m """\n  two\n lines""" state A { on go if n > 1 -> A }\n',
        'flow t\nmessage m """one"""\nmessage k """\n"""    state B\n',
        # A word met again is the same kind (the scan remembers kinds by text).
        "flow t\nevent go\nstate go { on go -> go }\n",
        # The conditional expression, nested, and `state` as a payload field.
        "flow t\nstate A { on go if if(n > 1, if(m, 1, 2), 3) > 0 -> A do n = if(a, b, c) }\n",
        'flow t\nstate A { on go -> A do xs[i + 1] = 2; a.b["k"] = [1]; delete(m, k) }\n',
        "flow t\nstate A { on go if any(x in xs: x > 1) or sum(y in f(a): y.n + 1) > 2 -> A }\n",
        "flow t\neffect fx(state: str)\n"
        "state A { on go if event.state == 1 -> A do emit fx(state: 1) }\n",
    ],
)
def test_expressions_and_positions_take_the_fast_path(text: str) -> None:
    assert agrees_with_lark(text)


@pytest.mark.parametrize(
    "text",
    [
        "flow t\nstate A { on go if event.1 -> A }\n",
        "flow t\nstate A { on go if event. -> A }\n",
        "flow t\nstate A { on go if if(a, b) -> A }\n",
        "flow t\nstate A { on go if any(xs: x) -> A }\n",
        "flow t\nstate A { on go if if(x in xs: x) -> A }\n",
    ],
)
def test_an_event_without_a_field_name_is_left_to_lark(text: str) -> None:
    assert fastparse.parse_module(text) is None
    assert parse_source(text).diagnostics


def test_a_scan_in_blocks_reads_what_a_whole_scan_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    # A large file is scanned a block of lines at a time; blocks as short as a line or two
    # put a boundary inside every kind of trivia (blank lines, comments, indentation).
    monkeypatch.setattr(fastparse, "_SCAN_BLOCK", 7)
    checked = 0
    for where, text in corpus():
        if '"""' in text or not 7 <= text.find("\n", 7) < len(text) - 1:
            continue  # scanned whole, or one block
        blocks = list(fastparse._scanned(text))
        assert len(blocks) > 1, where
        whole = fastparse._TOKEN.findall(text)
        pieces = [pair for block in blocks for pair in block]
        assert "".join(a + b for a, b in pieces) == text, where
        assert [b for _, b in pieces] == [b for _, b in whole], where
        agrees_with_lark(text)
        checked += 1
    assert checked > 50


def test_a_text_with_a_triple_quoted_string_is_scanned_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fastparse, "_SCAN_BLOCK", 7)
    text = 'flow t\nmessage m """\nstate X {\n}\n"""\nstate A\n'
    assert len(list(fastparse._scanned(text))) == 1
    assert agrees_with_lark(text)
