"""The flows the inspector tests run."""

from pathlib import Path

#: A support ticket: context changes, payloads, effects, a timer and a backward move.
TICKET = Path(__file__).with_name("ticket.flow")
