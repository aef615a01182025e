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


def no_traceback(err: str) -> None:
    assert "Traceback" not in err and "Error:" not in err.replace("error:", "")


def events(path: Path, *ops: dict[str, object]) -> str:
    path.write_text("".join(json.dumps(op) + "\n" for op in ops), encoding="utf-8")
    return str(path)


def test_snapshot_to_a_full_device(
    capsys: pytest.CaptureFixture[str], tally: str, tmp_path: Path
) -> None:
    ops = events(tmp_path / "e.jsonl", {"event": "inc"})
    code, out, err = flowc(capsys, "run", tally, "--events", ops, "--snapshot", "/dev/full")
    assert code == 1
    assert json.loads(out.splitlines()[-1])["ok"] is True  # the run itself went through
    assert err.splitlines() == [
        "flowc run: cannot save the snapshot to /dev/full: No space left on device"
    ]


def test_snapshot_to_a_directory_is_refused_before_running(
    capsys: pytest.CaptureFixture[str], tally: str, tmp_path: Path
) -> None:
    ops = events(tmp_path / "e.jsonl", {"event": "inc"})
    code, out, err = flowc(capsys, "run", tally, "--events", ops, "--snapshot", str(tmp_path))
    assert (code, out) == (2, "")
    assert err == f"flowc run: --snapshot {tmp_path} is a directory\n"


def test_snapshot_under_a_file_is_refused_before_running(
    capsys: pytest.CaptureFixture[str], tally: str, tmp_path: Path
) -> None:
    ops = events(tmp_path / "e.jsonl", {"event": "inc"})
    target = tmp_path / "e.jsonl" / "snap.json"
    code, out, err = flowc(capsys, "run", tally, "--events", ops, "--snapshot", str(target))
    assert (code, out) == (2, "")
    assert "is not a directory" in err and len(err.splitlines()) == 1


def test_snapshot_where_nothing_can_be_written_is_refused_before_running(
    capsys: pytest.CaptureFixture[str], tally: str, tmp_path: Path
) -> None:
    # /proc refuses new files even to root, as a read-only directory would.
    ops = events(tmp_path / "e.jsonl", {"event": "inc"})
    code, out, err = flowc(capsys, "run", tally, "--events", ops, "--snapshot", "/proc/s.json")
    assert (code, out) == (2, "")
    assert err.startswith("flowc run: --snapshot /proc/s.json: cannot write in /proc")
    assert len(err.splitlines()) == 1


def test_snapshot_in_a_missing_directory_is_created(
    capsys: pytest.CaptureFixture[str], tally: str, tmp_path: Path
) -> None:
    ops = events(tmp_path / "e.jsonl", {"event": "inc"})
    target = tmp_path / "new" / "dir" / "snap.json"
    code, _, err = flowc(capsys, "run", tally, "--events", ops, "--snapshot", str(target))
    assert code == 0 and err == ""
    assert json.loads(target.read_text(encoding="utf-8"))["context"] == {"count": 1}
    assert sorted(p.name for p in target.parent.iterdir()) == ["snap.json"]


def test_events_file_that_is_not_text(
    capsys: pytest.CaptureFixture[str], tally: str, tmp_path: Path
) -> None:
    bad = tmp_path / "e.jsonl"
    bad.write_bytes(b'{"event": "inc"}\n\xff\xfe\n')
    code, _, err = flowc(capsys, "run", tally, "--events", str(bad))
    assert code == 1 and len(err.splitlines()) == 1
    assert err.startswith(f"flowc run: events file {bad} is not UTF-8 text")
    no_traceback(err)


def test_events_file_that_cannot_be_read(capsys: pytest.CaptureFixture[str], tally: str) -> None:
    # Reading a process's memory file from its start fails with an I/O error.
    code, _, err = flowc(capsys, "run", tally, "--events", "/proc/self/mem")
    assert code == 1
    assert err == "flowc run: cannot read events file /proc/self/mem: Input/output error\n"


DEEP = "[" * 100_000 + "]" * 100_000


def test_deeply_nested_events_line(
    capsys: pytest.CaptureFixture[str], tally: str, tmp_path: Path
) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('{"event": "inc"}\n{"event": "inc", "payload": ' + DEEP + "}\n")
    code, out, err = flowc(capsys, "run", tally, "--events", str(path))
    assert code == 1 and len(out.splitlines()) == 2  # the start and the first step
    assert err == "flowc run: events line 2: nested too deeply\n"


def test_deeply_nested_snapshot(
    capsys: pytest.CaptureFixture[str], tally: str, tmp_path: Path
) -> None:
    snap = tmp_path / "snap.json"
    snap.write_text('{"flow": "tally", "context": ' + DEEP + "}")
    ops = events(tmp_path / "e.jsonl", {"event": "inc"})
    code, out, err = flowc(capsys, "run", tally, "--events", ops, "--snapshot", str(snap))
    assert (code, out) == (1, "")
    assert err == f"flowc run: cannot resume from {snap}: nested too deeply\n"
    assert snap.read_text().startswith('{"flow": "tally", "context": [[[')  # left as it was


def test_deeply_nested_compiled_flow(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    flow = tmp_path / "deep.json"
    flow.write_text('{"flow": ' + DEEP + "}")
    code, out, err = flowc(capsys, "run", str(flow), "--events", "/dev/null")
    assert (code, out) == (1, "")
    assert err.startswith(f"flowc run: {flow}: ") and len(err.splitlines()) == 1


def test_journal_that_fails_after_the_step_committed(
    capsys: pytest.CaptureFixture[str], tally: str, tmp_path: Path
) -> None:
    """The step is committed in the store; the journal write fails: both are reported, and the
    run stops there (later entries would leave a gap)."""
    store = f"sqlite:///{tmp_path / 'flows.db'}"
    journal = tmp_path / "log.md"
    journal.mkdir()  # a directory: appending to it fails
    flow = tmp_path / "logged.flow"
    flow.write_text(
        Path(tally).read_text(encoding="utf-8") + '\njournal log "{{ source }} -> {{ target }}"\n',
        encoding="utf-8",
    )
    ops = events(tmp_path / "e.jsonl", {"event": "inc"}, {"event": "inc"})
    code, out, err = flowc(
        capsys, "run", str(flow), "--store", store, "--id", "j1", "--events", ops,
        "--journal", f"log={journal}",
    )  # fmt: skip
    assert code == 1
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(x["kind"], x["ok"]) for x in lines] == [("start", True), ("event", True)]
    assert lines[1]["seq"] == 1
    assert err == (
        f"flowc run: step 1 of j1 (OPEN -> OPEN) is committed, but journal log could not be "
        f"written to {journal}: Is a directory; the journal misses its entry\n"
    )
    code, out, _ = flowc(capsys, "instances", "history", "j1", "--json", "--store", store)
    assert [json.loads(line)["seq"] for line in out.splitlines()] == [0, 1]


def test_deeply_nested_payload_and_context(
    capsys: pytest.CaptureFixture[str], tally: str, tmp_path: Path
) -> None:
    store = ("--store", f"sqlite:///{tmp_path / 'flows.db'}")
    code, _, err = flowc(capsys, "instances", "start", "tally", "--flow", tally, *store)
    started = flowc(capsys, "instances", "list", "--json", *store)[1]
    instance_id = json.loads(started)["id"]
    code, out, err = flowc(capsys, "instances", "send", instance_id, "inc", DEEP, *store)
    assert (code, out) == (2, "")
    assert err == "flowc instances: the payload is nested too deeply\n"
    code, out, err = flowc(capsys, "run", tally, "--context", DEEP, "--events", "/dev/null")
    assert (code, out) == (2, "")
    assert err == "flowc run: --context is nested too deeply\n"
