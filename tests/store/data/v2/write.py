"""Writes the fixtures of this folder with the code of the day they were made (main at the
first statecharts stop, commit 33840f4, IR version 2 before initial rules, done data, `for`,
`active()` and `event_name()`): the compiled `flows/examples/pr_review.flow` and a snapshot of
an instance in the middle of its parallel review. Run from the root of a checkout of that
commit:

    python tests/store/data/v2/write.py

The tests read the files; they never run this (it is kept to say how the files were made)."""

from __future__ import annotations

from pathlib import Path

from flowc.compiler import compile_file
from flowc.runtime import FakeClock, Machine

HERE = Path(__file__).resolve().parent
#: 2025-01-01T00:00:00Z, as the v1 fixtures.
START = 1735689600.0


def main() -> None:
    result = compile_file(Path("flows/examples/pr_review.flow"))
    assert result.flow is not None
    text = result.flow.to_json()
    (HERE / "pr_review.json").write_text(text + "\n")
    clock = FakeClock(START)
    inst = Machine.from_json(text, clock=clock).start(id="pr-1")
    inst.send("push", {"sha": "a1"})
    inst.send("ci_passed")
    clock.advance(60)
    inst.send("approve", {"reviewer": "ann"})
    (HERE / "snapshot.json").write_text(inst.snapshot_json() + "\n")


if __name__ == "__main__":
    main()
