"""Flows for the engine-driven store tests, compiled once per process."""

from __future__ import annotations

from functools import cache

from flowc.compiler import compile_source
from flowc.runtime import Machine

TALLY_V1 = """\
flow tally "Tally"
version 1

context { count: int = 0 }

event inc
event close

initial state OPEN {
  on inc -> self do count += 1
  on close -> CLOSED
}
final state CLOSED
"""

# v2: a new context field with a default; OPEN renamed COUNTING (needs a migration).
TALLY_V2 = """\
flow tally "Tally"
version 2

context {
  count: int = 0
  label: str = "new"
}

event inc
event close

initial state COUNTING {
  on inc -> self do count += 1
  on close -> CLOSED
}
final state CLOSED
"""

TIMED = """\
flow timed "Timed"
version 1

context { pings: int = 0 }

event go
event stop

initial state IDLE {
  on go -> WAITING
}
state WAITING {
  after 500ms -> RANG do pings += 1
  on stop -> STOPPED
}
state RANG {
  on go -> WAITING
}
final state STOPPED
"""


@cache
def machine(source: str) -> Machine:
    result = compile_source(source, "test.flow")
    assert result.flow is not None and not result.errors, result.diagnostics
    return Machine(result.flow.with_hash())


# Backward edges: `back` needs the most recent earlier state, which compact history must keep.
REVIEW = """\
flow review "Review"
version 1

event submit
event approve

initial state DRAFT {
  on submit -> REVIEW
}
state REVIEW {
  on approve -> CHECK
  -> DRAFT back
}
state CHECK {
  on approve -> DONE
  -> REVIEW back
  -> DRAFT back
}
final state DONE
"""
