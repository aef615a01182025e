"""The one rule for ids and keys: instance ids, idempotency (request) keys, worker owners.

Every backend and `DurableFlows` hold them to it, so a value one store would take and another
would choke on (PostgreSQL refuses NUL in text, UTF-8 has no lone surrogates) is refused the
same way everywhere, before any query, with the field it came in and a shortened echo.
"""

from __future__ import annotations

import re

from flowc.runtime.store.types import Json, StoreError, shorten

#: The longest id or key, in characters. Long enough for any UUID, hash or URL-safe token a
#: host makes; short enough that echoing one in a refusal is harmless.
MAX_HANDLE = 256


_SURROGATE = re.compile("[\ud800-\udfff]")


class InvalidHandle(StoreError, ValueError):
    """An id or key that breaks the rule (`handle_problem`); nothing was read or written.
    `field` names the argument (`id`, `key`, `owner`)."""

    def __init__(self, field: str, value: object, problem: str) -> None:
        self.field = field
        self.problem = problem
        self.shown = shorten(value)
        super().__init__(f"{field} {self.shown} is refused: {problem}")

    def to_dict(self, fields: dict[str, str] | None = None) -> dict[str, Json]:
        """The refusal as JSON; `fields` renames the field for a host whose arguments have
        other names (the MCP tools' `instance_id`, `request_id`)."""
        field = (fields or {}).get(self.field, self.field)
        return {
            "ok": False,
            "error": "invalid_handle",
            "kind": "invalid_handle",
            "field": field,
            "message": f"{field} {self.shown} is refused: {self.problem}.",
            "provided": self.shown,
            "problem": self.problem,
        }


def handle_problem(value: object) -> str | None:
    """What is wrong with `value` as an id or key, or None: a string of 1 to MAX_HANDLE
    characters, without NUL and without lone surrogates (text every backend stores as is)."""
    if not isinstance(value, str):
        return f"expected a string, got {type(value).__name__}"
    if not value:
        return "it is empty"
    if len(value) > MAX_HANDLE:
        return f"it is {len(value)} characters long; at most {MAX_HANDLE} are allowed"
    if "\0" in value:
        return "it contains a NUL character"
    if _SURROGATE.search(value):
        return "it contains a lone surrogate (not valid Unicode text)"
    return None


def check_handle(field: str, value: object) -> None:
    """Raise `InvalidHandle` unless `value` follows the rule."""
    problem = handle_problem(value)
    if problem is not None:
        raise InvalidHandle(field, value, problem)


def check_step_handles(instance_id: object, key: object) -> None:
    """A step's instance id and (optional) idempotency key."""
    check_handle("id", instance_id)
    if key is not None:
        check_handle("key", key)


def check_page(limit: int, offset: int) -> None:
    """A listing's `limit` and `offset`: whole numbers, not negative (ValueError)."""
    for name, value in (("limit", limit), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a whole number, 0 or more, not {value!r}")
