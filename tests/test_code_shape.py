"""The shape of the code itself: no function in compiler/, runtime/ or hosts/ runs over 100
lines (the developer guide's limit; issue 24 item 7). A long function is split into named
pieces that each do one thing, never exempted here."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[1]
FOLDERS = ("compiler", "runtime", "hosts")
LONGEST = 100


def function_lengths(root: Path, folder: str) -> dict[str, int]:
    """Every function and method under `root/folder` (nested ones too), keyed
    `path:line:name` with the path relative to `root`, and its length in lines from its `def`
    to its last line (decorators not counted)."""
    lengths: dict[str, int] = {}
    for path in sorted((root / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                where = f"{path.relative_to(root)}:{node.lineno}:{node.name}"
                lengths[where] = node.end_lineno - node.lineno + 1
    return lengths


def test_no_function_is_over_100_lines() -> None:
    too_long = {
        where: length
        for folder in FOLDERS
        for where, length in function_lengths(ROOT, folder).items()
        if length > LONGEST
    }
    assert too_long == {}


def test_the_measure_counts_each_function_from_def_to_last_line(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "probe.py").write_text(
        "@decorated\n"
        "def outer():\n"
        "    def inner():\n"
        "        return 1\n"
        "    return inner\n"
        "\n"
        "class Holder:\n"
        "    async def method(self):\n"
        "        pass\n"
    )
    assert function_lengths(tmp_path, "pkg") == {
        "pkg/probe.py:2:outer": 4,
        "pkg/probe.py:3:inner": 2,
        "pkg/probe.py:8:method": 2,
    }


def test_complex_functions_stay_under_two_per_thousand_lines() -> None:
    # ruff's C901 (a function's branches past 10) in compiler/ and runtime/: issue 24 set the
    # bound at 2 findings per 1,000 lines (Lark's 2.1, Jinja2's 1.5); today 13 in 38,594.
    import subprocess
    import sys

    found = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--select", "C901", "--output-format",
         "concise", "--no-cache", "compiler", "runtime"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    findings = [line for line in found.stdout.splitlines() if " C901 " in line]
    lines = sum(
        len(p.read_text().splitlines())
        for f in ("compiler", "runtime")
        for p in (ROOT / f).rglob("*.py")
    )
    assert found.returncode in (0, 1) and lines > 10_000, found.stderr  # ruff ran, on the tree
    assert len(findings) * 1000 / lines <= 2.0, "\n".join(findings)
