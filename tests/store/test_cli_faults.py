"""`flowc run`, `instances` and `worker` under bad input and faults: one clear line, the
documented exit code, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.compiler.cli import main
from store.flows import TALLY_V1


def flowc(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def tally(tmp_path: Path) -> str:
    path = tmp_path / "tally.flow"
    path.write_text(TALLY_V1, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("as_json", [False, True])
def test_listing_an_empty_store(capsys: pytest.CaptureFixture[str], as_json: bool) -> None:
    code, out, err = flowc(
        capsys, "instances", "list", "--store", "memory:", *(["--json"] if as_json else [])
    )
    assert code == 0 and err == ""
    assert out == ("" if as_json else "ID  FLOW  VERSION  STATE  SEQ  UPDATED\n")


@pytest.mark.parametrize("seconds", ["nan", "-5", "inf"])
def test_worker_for_takes_finite_seconds(capsys: pytest.CaptureFixture[str], seconds: str) -> None:
    code, _, err = flowc(capsys, "worker", "--store", "memory:", "--for", seconds)
    assert code == 2 and "--for" in err


@pytest.mark.parametrize("option", ["--poll", "--lease"])
def test_worker_poll_and_lease_are_finite(capsys: pytest.CaptureFixture[str], option: str) -> None:
    code, _, err = flowc(capsys, "worker", "--store", "memory:", option, "nan", "--once")
    assert code == 2 and option in err
