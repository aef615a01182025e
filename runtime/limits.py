"""Bounds on the work a step may do and the values it may keep.

A payload, a guard, an action or a template must never make a step hang, exhaust memory, or
commit a value that cannot be stored or serialised. `Limits` holds the bounds of one machine
(`Machine(..., limits=Limits(max_string=...))` raises them); the defaults suit requests from
untrusted clients. Validation (validate.py) refuses payload and context values past them
field by field; expressions and actions (expr.py, codegen.py) raise `LimitExceeded`, which a
step turns into a `limit_exceeded` rejection; templates (templating.py) raise it while
rendering.

What "storable" means is the intersection of the backends: a string is text PostgreSQL can
hold (no NUL, no lone surrogate: both are refused by its `text` and `jsonb` types, and a lone
surrogate cannot even be encoded as UTF-8), an integer has few enough digits to be written as
JSON by Python (`sys.get_int_max_str_digits`), a float is finite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NoReturn


class LimitExceeded(Exception):
    """A value or a computation past one of the machine's `Limits`; `detail` words it."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of one machine. Every field may be raised (or lowered) by the host."""

    #: Characters in one string: a payload field, a context value, a computed string.
    max_string: int = 1_000_000
    #: Items in one list, entries in one map.
    max_items: int = 100_000
    #: Decimal digits of an integer (an unranged `int` is unbounded otherwise). At most 4,300,
    #: Python's own limit for writing an integer as text (and so as JSON).
    max_int_digits: int = 1_000
    #: Total size of a computed value stored by an action: characters of its strings plus
    #: items of its lists and maps (values shared by reference count each time they appear,
    #: as they would in JSON).
    max_value_size: int = 4_000_000
    #: Nesting of lists, maps and records in one value.
    max_depth: int = 64
    #: Characters one template may render.
    max_template_output: int = 1_000_000
    #: Loop iterations, calls and intercepted operations one template render may make.
    max_template_steps: int = 100_000
    #: Field-level issues listed in one `invalid_payload` / `invalid_context` rejection (the
    #: count of the others is given).
    max_issues: int = 100
    #: Characters of a `reason` or an idempotency key.
    max_argument: int = 10_000
    #: Microsteps in one step of a statechart: the transitions taken for the trigger, the
    #: eventless rules and the raised events processed before the step commits (run to
    #: completion). A step needing more is refused (`limit_exceeded`), nothing changed.
    max_microsteps: int = 100
    #: Loop iterations in one step, all `for` loops together, nested ones included: a loop
    #: charges its list's length when it starts, so a step past the budget is refused before
    #: the loop does any of its work (`limit_exceeded`, nothing changed).
    max_loop_iterations: int = 100_000
    #: Effects emitted plus events raised by one step.
    max_outputs: int = 1_000
    #: Total size of the payloads of one step's effects and raised events, measured as
    #: `max_value_size` is (characters of strings plus items of lists and maps).
    max_output_size: int = 10_000_000
    _int_max: int = field(init=False, repr=False, compare=False)
    _int_bits: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 1 <= self.max_int_digits <= 4300:
            raise ValueError("max_int_digits must be from 1 to 4300")
        for name in (
            "max_string",
            "max_items",
            "max_value_size",
            "max_depth",
            "max_template_output",
            "max_template_steps",
            "max_issues",
            "max_argument",
            "max_microsteps",
            "max_loop_iterations",
            "max_outputs",
            "max_output_size",
        ):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        object.__setattr__(self, "_int_max", 10**self.max_int_digits - 1)
        object.__setattr__(self, "_int_bits", self._int_max.bit_length())

    @property
    def int_max(self) -> int:
        """The largest magnitude an integer may have."""
        return self._int_max

    @property
    def int_bits(self) -> int:
        return self._int_bits

    # ---- checks of single values ------------------------------------------------------------
    def string_problem(self, s: str) -> str | None:
        """Why `s` cannot be kept, or None."""
        if len(s) > self.max_string:
            return f"the string has {len(s):,} characters; at most {self.max_string:,} are allowed"
        return text_problem(s)

    def int_problem(self, n: int) -> str | None:
        if -self._int_max <= n <= self._int_max:
            return None
        return f"the integer has more than {self.max_int_digits:,} digits"

    def items_problem(self, n: int) -> str | None:
        if n <= self.max_items:
            return None
        return f"{n:,} items; at most {self.max_items:,} are allowed"

    # ---- computed values --------------------------------------------------------------------
    def check_computed(self, value: Any) -> Any:
        """`value` itself when an action may store it; raises `LimitExceeded` otherwise. Walks
        the value, stopping as soon as its size is past `max_value_size`."""
        _measure(self, value, 0, [self.max_value_size])
        return value

    def output_size(self, value: Any, room: int) -> int:
        """The size of a payload `value` (as `check_computed` measures it), which a step's
        outputs may still grow by `room`; raises `LimitExceeded` past it, having walked at most
        `room` of the value."""
        budget = [room]
        try:
            _measure(self, value, 0, budget)
        except LimitExceeded:
            if budget[0] >= 0:
                raise  # a string, integer or nesting past its own limit
            raise LimitExceeded(
                f"the step's effects and raised events are larger than "
                f"{self.max_output_size:,} (characters plus items; Limits.max_output_size)"
            ) from None
        return room - budget[0]

    def check_int(self, n: Any) -> Any:
        """`check_computed` for a number: `n` itself unless it is an integer past the limit."""
        if type(n) is int and not -self._int_max <= n <= self._int_max:
            raise LimitExceeded(f"the integer has more than {self.max_int_digits:,} digits")
        return n

    def check_str(self, s: Any) -> Any:
        """`check_computed` for a string."""
        if type(s) is str and (len(s) > self.max_string or not s.isascii() or "\x00" in s):
            problem = self.string_problem(s)
            if problem is not None:
                raise LimitExceeded(problem)
        return s

    def mul(self, a: Any, b: Any) -> Any:
        """`a * b`, refused before it is computed when the result would be past the limits."""
        ta, tb = type(a), type(b)
        if ta is int and tb is int:
            if a.bit_length() + b.bit_length() > self._int_bits + 1:
                raise LimitExceeded(f"the product has more than {self.max_int_digits:,} digits")
        elif tb is int and isinstance(a, str | list | tuple):
            self._repeat(a, b)
        elif ta is int and isinstance(b, str | list | tuple):
            self._repeat(b, a)
        return a * b

    def _repeat(self, seq: Any, n: int) -> None:
        size = len(seq) * max(n, 0)
        text = isinstance(seq, str)
        bound = self.max_string if text else self.max_items
        if size > bound:
            what = "characters" if text else "items"
            raise LimitExceeded(f"repeating it would make {size:,} {what}; at most {bound:,}")

    def power(self, a: Any, b: Any) -> Any:
        """`a ** b` (templates only), refused before it is computed when too large."""
        if type(a) is int and type(b) is int and b > 0 and abs(a) > 1:
            bits = (abs(a).bit_length() - 1) * b
            if bits > self._int_bits:
                raise LimitExceeded(f"the power has more than {self.max_int_digits:,} digits")
        return a**b


#: The limits of a machine made without any.
DEFAULT_LIMITS = Limits()

# NUL and lone surrogates (a valid pair is never two `str` code points in Python).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def text_problem(s: str) -> str | None:
    """Why text `s` cannot be stored (a NUL, a lone surrogate), or None."""
    if s.isascii():
        return "the string contains a NUL character" if "\x00" in s else None
    bad = _UNSTORABLE.search(s)
    if bad is None:
        return None
    if bad.group() == "\x00":
        return "the string contains a NUL character"
    return f"the string contains a lone surrogate (U+{ord(bad.group()):04X})"


def storable(text: str) -> str:
    """`text` with its NUL characters and lone surrogates written as escapes (`\\x00`,
    `\\ud800`): what a refusal shows of a name or a value it could not keep."""
    if text_problem(text) is None:
        return text
    text = text.replace("\x00", "\\x00")
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _measure(limits: Limits, value: Any, depth: int, budget: list[int]) -> None:
    # Strings and integers, the usual leaves, are checked inline (no call per item): a computed
    # record of a dozen fields is walked on every step that stores it.
    t = type(value)
    if t is str:
        n = len(value)
        if n > limits.max_string or not value.isascii() or "\x00" in value:
            problem = limits.string_problem(value)
            if problem is not None:
                raise LimitExceeded(problem)
        budget[0] -= n
    elif t is int:
        if not -limits._int_max <= value <= limits._int_max:
            raise LimitExceeded(f"the integer has more than {limits.max_int_digits:,} digits")
    elif t is list or t is dict:
        _measure_container(limits, value, depth, budget)
    if budget[0] < 0:
        _too_large(limits)


def _measure_container(
    limits: Limits, value: list[Any] | dict[Any, Any], depth: int, budget: list[int]
) -> None:
    """`_measure` of a list or dict: its own size, then each item (short plain strings
    counted inline)."""
    if depth >= limits.max_depth:
        raise LimitExceeded(f"the value is nested more than {limits.max_depth} levels deep")
    problem = limits.items_problem(len(value))
    if problem is not None:
        raise LimitExceeded(f"the value has {problem}")
    budget[0] -= len(value)
    if type(value) is dict:
        _measure_dict(limits, value, depth + 1, budget)
        return
    inner = depth + 1
    longest = limits.max_string
    for v in value:
        if type(v) is str and len(v) <= longest and v.isascii() and "\x00" not in v:
            budget[0] -= len(v)
            if budget[0] < 0:
                _too_large(limits)
        else:
            _measure(limits, v, inner, budget)


def _measure_dict(limits: Limits, value: dict[Any, Any], inner: int, budget: list[int]) -> None:
    """The keys and values of a dict, at depth `inner` (short plain strings counted inline)."""
    longest = limits.max_string
    for k, v in value.items():
        if type(k) is str and len(k) <= longest and k.isascii() and "\x00" not in k:
            budget[0] -= len(k)
            if budget[0] < 0:
                _too_large(limits)
        else:
            _measure(limits, k, inner, budget)
        if type(v) is str and len(v) <= longest and v.isascii() and "\x00" not in v:
            budget[0] -= len(v)
            if budget[0] < 0:
                _too_large(limits)
        else:
            _measure(limits, v, inner, budget)


def _too_large(limits: Limits) -> NoReturn:
    raise LimitExceeded(
        f"the value is larger than {limits.max_value_size:,} (characters plus items)"
    )
