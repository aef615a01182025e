"""`flowc check --format sarif|github`: the reports CI services read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.compiler.cli import main

BAD = "flow bad\nevent go\ninitial state A { on og -> B }\nfinal state B\n"
WARNS = """flow warns
event go
event unused
initial state A { on go -> B }
final state B
"""
DUPLICATE = "flow dup\nevent go\ninitial state A { on go -> A }\nstate A\n"


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    Path("flows").mkdir()
    Path("flows/bad.flow").write_text(BAD)
    Path("flows/warns.flow").write_text(WARNS)
    Path("flows/dup, odd.flow").write_text(DUPLICATE)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_sarif_report(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "--format", "sarif", "flows")
    assert code == 1
    report = json.loads(out)
    assert report["version"] == "2.1.0"
    assert report["$schema"].endswith("sarif-2.1.0.json")
    [sarif_run] = report["runs"]
    driver = sarif_run["tool"]["driver"]
    assert driver["name"] == "flowc"
    assert sarif_run["columnKind"] == "unicodeCodePoints"
    rules = [r["id"] for r in driver["rules"]]
    assert rules == sorted({"E103", "E105", "W310"})
    by_code = {r["ruleId"]: r for r in sarif_run["results"]}
    typo = by_code["E105"]
    assert typo["level"] == "error"
    assert rules[typo["ruleIndex"]] == "E105"
    assert typo["message"]["text"].startswith("unknown event `og`")
    location = typo["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "flows/bad.flow"
    assert location["region"] == {"startLine": 3, "startColumn": 22, "endLine": 3, "endColumn": 24}
    [fix] = typo["fixes"]
    [change] = fix["artifactChanges"]
    [replacement] = change["replacements"]
    assert replacement["insertedContent"] == {"text": "go"}
    assert replacement["deletedRegion"]["startColumn"] == 22
    assert by_code["W310"]["level"] == "warning"
    duplicate = by_code["E103"]
    assert duplicate["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "flows/dup%2C%20odd.flow"
    )
    [related] = duplicate["relatedLocations"]
    assert related["physicalLocation"]["region"]["startLine"] == 3


def test_sarif_of_clean_files_has_no_results(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("clean.flow").write_text(
        "flow ok\nevent go\ninitial state A { on go -> B }\nfinal state B\n"
    )
    code, out, _ = run(capsys, "check", "--format", "sarif", "clean.flow")
    assert code == 0
    assert json.loads(out)["runs"][0]["results"] == []


def test_github_annotations(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", "--format", "github", "flows")
    assert code == 1
    lines = out.splitlines()
    assert (
        "::error file=flows/bad.flow,line=3,col=22,endLine=3,endColumn=24,title=E105"
        "::unknown event `og` (did you mean `go`?)"
    ) in lines
    assert any(
        line.startswith("::warning file=flows/warns.flow,line=3,col=7,") and "title=W310::" in line
        for line in lines
    )
    # A comma in a path would end the property: it is escaped, as the workflow syntax requires.
    assert any(line.startswith("::error file=flows/dup%2C odd.flow,") for line in lines)
    assert len(lines) == 3
    assert "2 errors, 1 warning in 3 files" in err
