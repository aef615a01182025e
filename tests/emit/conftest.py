"""A flow that uses every construct a diagram must show."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source
from flowc.runtime.model import CompiledFlow

SAMPLE = """\
flow review "Document review"
version 3

enum Verdict { APPROVE, REJECT }

context {
  rounds: int = 0
  reminders: int = 0
  notes: list[str] = []
}

event submit(text: str)
event decide(verdict: Verdict, note: str)
event cancel

initial state DRAFT "Author writes" {
  meta { panel: "editor" }
  on submit if len(event.text) == 0 reject empty_text "Nothing to review."
  on submit -> ROUTE do rounds += 1
}

choice state ROUTE {
  if rounds > 3 -> ESCALATED
  else -> REVIEW
}

state REVIEW "Reviewer reads" {
  entry do reminders = 0
  on decide if event.verdict == APPROVE -> DONE do append(notes, event.note)
  on decide -> DRAFT back
  after 2d if reminders < 2 -> REVIEW do reminders += 1
  after 7d -> ESCALATED
}

state ESCALATED "Manager decides" {
  -> DONE
  -> DRAFT back
}

final state DONE "Published"
final state CANCELLED

on cancel -> CANCELLED
"""


@pytest.fixture(scope="session")
def sample() -> CompiledFlow:
    result = compile_source(SAMPLE, "review.flow")
    assert result.flow is not None, result.diagnostics
    return result.flow
