"""`flowc-run` (the TypeScript runtime's command) prints what `flowc run` prints: the same JSON
lines (equal once parsed) and the same exit status, on the seed flows and the statechart
examples, driven by the events files in tests/ts/events/ (each flow compiled by `flowc compile`
first), and the same refusals of bad options and bad lines."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flowc.compiler.cli import main
from ts.node_runtime import built, node
from ts.seed_flows import CONTEXTS, EVENTS, FLOWS, NOW, ROOT, compile_flows


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return compile_flows(tmp_path_factory.mktemp("compiled"))


@pytest.fixture(scope="module")
def cli() -> Path:
    return built() / "cli.js"


#: A command's exit status, its lines (parsed) and its standard error.
Outcome = tuple[int, list[Any], str]


def python_run(args: list[str], capsys: pytest.CaptureFixture[str]) -> Outcome:
    capsys.readouterr()
    code = main(["run", *args])
    captured = capsys.readouterr()
    return code, [json.loads(line) for line in captured.out.splitlines()], captured.err


def ts_run(cli: Path, args: list[str], stdin: str = "") -> Outcome:
    done = subprocess.run(
        [node(), str(cli), *args], input=stdin, capture_output=True, text=True, timeout=60
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def both(cli: Path, args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[Outcome, Outcome]:
    return python_run(args, capsys), ts_run(cli, args)


def test_every_seed_flow_and_example_has_an_events_file() -> None:
    assert {f.stem for f in FLOWS} == {p.stem for p in EVENTS.glob("*.jsonl")}
    assert len(FLOWS) == 12  # (with the child-flow examples order_saga, payment, review)


@pytest.mark.parametrize("stem", [f.stem for f in FLOWS])
@pytest.mark.parametrize("keep_going", [True, False], ids=["keep-going", "first-rejection"])
def test_same_lines_as_flowc_run(
    stem: str,
    keep_going: bool,
    compiled: dict[str, Path],
    cli: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = [str(compiled[stem]), "--events", str(EVENTS / f"{stem}.jsonl"), "--now", NOW]
    args += ["--context", json.dumps(CONTEXTS.get(stem, {}))]
    if keep_going:
        args.append("--keep-going")
    (py_code, py_lines, _), (ts_code, ts_lines, ts_err) = both(cli, args, capsys)
    assert ts_err == ""
    assert ts_lines == py_lines
    assert ts_code == py_code
    # Each file has refusals (exit 1) and accepted steps; without --keep-going the first
    # refusal is the last line.
    assert py_code == 1
    if keep_going:
        assert any(line.get("ok") for line in py_lines[1:])
    else:
        assert py_lines[-1]["ok"] is False


def test_same_lines_on_standard_input(
    compiled: dict[str, Path], cli: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ops = (EVENTS / "microwave.jsonl").read_text(encoding="utf-8")
    args = [str(compiled["microwave"]), "--now", "1735689600", "--keep-going"]
    stdin = tmp_path / "ops.jsonl"
    stdin.write_text(ops, encoding="utf-8")
    py = python_run([*args, "--events", str(stdin)], capsys)
    assert ts_run(cli, [*args, "--events", "-"], ops)[:2] == py[:2]
    assert ts_run(cli, args, ops)[:2] == py[:2]


def test_real_clock_lines_match_but_for_their_times(
    compiled: dict[str, Path], cli: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [str(compiled["pr_review"]), "--events", str(EVENTS / "pr_review.jsonl")]
    (py_code, py_lines, _), (ts_code, ts_lines, _) = both(cli, [*args, "--keep-going"], capsys)
    for line in (*py_lines, *ts_lines):
        line.pop("at", None)
    assert (ts_code, ts_lines) == (py_code, py_lines)


def test_a_start_context_refused_is_one_line_and_exit_1(
    compiled: dict[str, Path], cli: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [str(compiled["rfp_workspace"]), "--context", '{"project": 5, "nope": 1}']
    (py_code, py_lines, _), (ts_code, ts_lines, _) = both(cli, args, capsys)
    assert py_code == 1 and py_lines[0]["ok"] is False
    assert (ts_code, ts_lines) == (py_code, py_lines)


BAD_LINES = [
    "[1, 2]",
    '{"event": 5}',
    '{"goto": "ANALYZING", "force": "yes"}',
    '{"event": "update_status", "reason": 7}',
    '{"event": "update_status", "payload": [1]}',
    '{"advance": -1}',
    '{"advance": "soon"}',
    '{"advance": true}',
    '{"jump": "ANALYZING"}',
]


@pytest.fixture
def on_rfp(
    compiled: dict[str, Path], cli: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> Callable[[str, list[str]], tuple[Outcome, Outcome]]:
    """Both commands on rfp_workspace with `text` as the events file (and more arguments)."""

    def run(text: str, more: list[str]) -> tuple[Outcome, Outcome]:
        events = tmp_path / "e.jsonl"
        events.write_bytes(text.encode("utf-8"))
        args = [str(compiled["rfp_workspace"]), "--context", '{"project": "p"}', "--now", NOW]
        return both(cli, [*args, "--events", str(events), *more], capsys)

    return run


@pytest.mark.parametrize("bad", BAD_LINES)
def test_a_malformed_line_stops_the_run_with_exit_1(
    bad: str, on_rfp: Callable[[str, list[str]], tuple[Outcome, Outcome]]
) -> None:
    text = '{"goto": "ANALYZING"}\n\n# a comment\n' + bad + "\n"
    (py_code, py_lines, py_err), (ts_code, ts_lines, ts_err) = on_rfp(text, [])
    assert (ts_code, ts_lines) == (py_code, py_lines) == (1, py_lines)
    assert py_err.removeprefix("flowc run: ") == ts_err.removeprefix("flowc-run: ")
    assert ts_err.startswith("flowc-run: events line 4: ")


def test_a_line_that_is_not_json_stops_the_run_with_exit_1(
    on_rfp: Callable[[str, list[str]], tuple[Outcome, Outcome]],
) -> None:
    text = '{"goto": "ANALYZING"}\n{"goto": \n'
    (py_code, py_lines, _), (ts_code, ts_lines, ts_err) = on_rfp(text, [])
    assert (ts_code, ts_lines) == (py_code, py_lines)
    assert py_code == 1 and ts_err.startswith("flowc-run: events line 2: ")


USAGE = [
    (["NO_SUCH.json"], "no such file: NO_SUCH.json"),
    (["{flow}", "--context", "[1]"], "--context must be a JSON object"),
    (["{flow}", "--context", "{bad"], "--context is not JSON: "),
    (["{flow}", "--now", "someday"], "--now: not a time: 'someday'"),
    (["{flow}", "--events", "NO_SUCH.jsonl"], "no such events file: NO_SUCH.jsonl"),
]


@pytest.mark.parametrize(("args", "message"), USAGE)
def test_usage_errors_exit_2_with_the_same_message(
    args: list[str],
    message: str,
    compiled: dict[str, Path],
    cli: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = [a.replace("{flow}", str(compiled["rfp_workspace"])) for a in args]
    (py_code, py_lines, py_err), (ts_code, ts_lines, ts_err) = both(cli, args, capsys)
    assert (py_code, ts_code) == (2, 2)
    assert py_lines == ts_lines == []
    assert py_err.startswith(f"flowc run: {message}")
    assert ts_err.startswith(f"flowc-run: {message}")


def test_a_flow_that_does_not_load_exits_1(cli: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"ir_version": 99}', encoding="utf-8")
    code, lines, err = ts_run(cli, [str(broken)])
    assert (code, lines) == (1, [])
    assert err.startswith(f"flowc-run: {broken}: ")


def test_a_flow_source_must_be_compiled_first(cli: Path) -> None:
    code, _, err = ts_run(cli, [str(ROOT / "flows" / "rfp_workspace.flow")])
    assert code == 2 and "compile it first" in err


@pytest.mark.parametrize(
    "text",
    [
        '\ufeff{"goto": "ANALYZING"}\n',
        '{"goto": "ANALYZING"}\x1c{"goto": "QNA_GENERATION"}\r\n\u3000{"back": true}\x85\n',
        '{"goto": "ANALYZING"}\r{"goto": "QNA_GENERATION"}\u2028\n',
    ],
    ids=["byte-order-mark", "python-whitespace", "line-breaks"],
)
def test_lines_split_and_strip_as_python_does(
    text: str, on_rfp: Callable[[str, list[str]], tuple[Outcome, Outcome]]
) -> None:
    (py_code, py_lines, py_err), (ts_code, ts_lines, ts_err) = on_rfp(text, ["--keep-going"])
    assert (ts_code, ts_lines) == (py_code, py_lines)
    assert bool(py_err) == bool(ts_err)


def halves(stem: str) -> tuple[str, str]:
    """The events file of `stem`, cut in two."""
    lines = (EVENTS / f"{stem}.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    middle = len(lines) // 2
    return "".join(lines[:middle]), "".join(lines[middle:])


@pytest.mark.parametrize("stem", ["rfp_workspace", "pr_review", "elevator"])
@pytest.mark.parametrize("first", ["python", "typescript"])
def test_a_snapshot_saved_by_one_command_resumes_in_the_other(
    stem: str,
    first: str,
    compiled: dict[str, Path],
    cli: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """Half the operations in one runtime, the rest in the other, through --snapshot: the same
    lines and the same snapshot at the end as when `flowc run` does both halves."""
    head, tail = halves(stem)
    for name, text in (("head", head), ("tail", tail)):
        (tmp_path / f"{name}.jsonl").write_text(text, encoding="utf-8")
    base = [str(compiled[stem]), "--now", NOW, "--keep-going"]

    def args(snapshot: Path, part: str, *more: str) -> list[str]:
        return [*base, "--snapshot", str(snapshot), "--events", str(tmp_path / part), *more]

    context = ["--context", json.dumps(CONTEXTS.get(stem, {}))]
    alone, mixed = tmp_path / "alone.json", tmp_path / "mixed.json"
    python_run(args(alone, "head.jsonl", *context), capsys)
    expected = python_run(args(alone, "tail.jsonl"), capsys)
    if first == "python":
        python_run(args(mixed, "head.jsonl", *context), capsys)
        got = ts_run(cli, args(mixed, "tail.jsonl"))
    else:
        ts_run(cli, args(mixed, "head.jsonl", *context))
        got = python_run(args(mixed, "tail.jsonl"), capsys)
    assert got[:2] == expected[:2]
    assert expected[1], "the second half prints lines"
    snapshot = json.loads(mixed.read_text(encoding="utf-8"))
    assert snapshot == json.loads(alone.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("dir", "--snapshot {path} is a directory"),
        ("not json", "cannot resume from {path}: "),
        ("list", "cannot resume from {path}: a snapshot is a JSON object"),
    ],
)
def test_a_snapshot_file_refused_as_flowc_run_refuses_it(
    setup: str,
    message: str,
    compiled: dict[str, Path],
    cli: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.json"
    if setup == "dir":
        path.mkdir()
    else:
        path.write_text("{nope" if setup == "not json" else "[1]", encoding="utf-8")
    args = [str(compiled["rfp_workspace"]), "--snapshot", str(path), "--events", os.devnull]
    (py_code, py_lines, py_err), (ts_code, ts_lines, ts_err) = both(cli, args, capsys)
    assert (ts_code, ts_lines) == (py_code, py_lines)
    expected = message.format(path=path)
    assert py_err.startswith(f"flowc run: {expected}")
    assert ts_err.startswith(f"flowc-run: {expected}")


#: Flows with children (IR version 5): a parent .flow beside the flows it invokes, with an
#: events file each in tests/ts/events/children/.
CHILD_FLOWS = {
    "shop": ROOT / "runtime-ts" / "test" / "fixtures" / "children" / "shop.flow",
    "top": ROOT / "runtime-ts" / "test" / "fixtures" / "children" / "top.flow",
    "pong": ROOT / "runtime-ts" / "test" / "fixtures" / "children" / "pong.flow",
    "basket": ROOT / "tests" / "testing" / "flows" / "basket.flow",
}


@pytest.fixture(scope="module")
def compiled_parents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("parents")
    for stem, flow in CHILD_FLOWS.items():
        assert main(["compile", str(flow), "-o", str(out / f"{stem}.json")]) == 0
    return {stem: out / f"{stem}.json" for stem in CHILD_FLOWS}


@pytest.mark.parametrize("stem", sorted(CHILD_FLOWS))
def test_same_lines_for_a_flow_with_children(
    stem: str, compiled_parents: dict[str, Path], cli: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The host drives the root: messages from children are delivered after each call, and
    `advance` fires the whole tree's timers, printing the root's steps."""
    events = EVENTS / "children" / f"{stem}.jsonl"
    args = [str(compiled_parents[stem]), "--events", str(events), "--now", NOW, "--keep-going"]
    (py_code, py_lines, _), (ts_code, ts_lines, ts_err) = both(cli, args, capsys)
    assert ts_err == ""
    assert (ts_code, ts_lines) == (py_code, py_lines)
    assert any(line.get("kind") == "message" for line in py_lines) or stem == "basket"


@pytest.mark.parametrize("stem", ["shop", "top", "pong"])
@pytest.mark.parametrize("first", ["python", "typescript"])
def test_a_tree_saved_by_one_command_resumes_in_the_other(
    stem: str,
    first: str,
    compiled_parents: dict[str, Path],
    cli: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """--snapshot of a tree of instances (flowc.snapshot/4: children, joins, the inbox) written
    by one runtime and resumed by the other: the same lines and snapshot as `flowc run` alone."""
    lines = (EVENTS / "children" / f"{stem}.jsonl").read_text(encoding="utf-8").splitlines(True)
    middle = 2 if stem != "pong" else 1  # (a tree with a child, or a full inbox, in between)
    (tmp_path / "head.jsonl").write_text("".join(lines[:middle]), encoding="utf-8")
    (tmp_path / "tail.jsonl").write_text("".join(lines[middle:]), encoding="utf-8")
    base = [str(compiled_parents[stem]), "--now", NOW, "--keep-going"]

    def args(snapshot: Path, part: str) -> list[str]:
        return [*base, "--snapshot", str(snapshot), "--events", str(tmp_path / part)]

    alone, mixed = tmp_path / "alone.json", tmp_path / "mixed.json"
    python_run(args(alone, "head.jsonl"), capsys)
    assert json.loads(alone.read_text(encoding="utf-8"))["format"] == "flowc.snapshot/4"
    expected = python_run(args(alone, "tail.jsonl"), capsys)
    if first == "python":
        python_run(args(mixed, "head.jsonl"), capsys)
        got = ts_run(cli, args(mixed, "tail.jsonl"))
    else:
        ts_run(cli, args(mixed, "head.jsonl"))
        got = python_run(args(mixed, "tail.jsonl"), capsys)
    assert got[:2] == expected[:2]
    snapshot = json.loads(mixed.read_text(encoding="utf-8"))
    assert snapshot == json.loads(alone.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "line",
    [
        '{"advance": 5, "child": "pay"}',
        '{"event": "approve", "child": 5}',
        '{"back": 1, "child": ""}',
    ],
)
def test_a_bad_child_operation_is_refused_alike(
    line: str,
    compiled_parents: dict[str, Path],
    cli: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    events = tmp_path / "ops.jsonl"
    events.write_text('{"event": "buy"}\n' + line + "\n", encoding="utf-8")
    args = [str(compiled_parents["shop"]), "--events", str(events), "--now", NOW]
    (py_code, py_lines, py_err), (ts_code, ts_lines, ts_err) = both(cli, args, capsys)
    assert (ts_code, ts_lines) == (py_code, py_lines)
    assert ts_err.replace("flowc-run", "flowc run") == py_err
    assert py_code == 1 and "`child`" in py_err
