"""Source text and positions. Lines and columns are 1-based; `end_column` is exclusive."""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import NamedTuple


class Span(NamedTuple):
    """Where a piece of source is. A named tuple rather than a dataclass: a large file's parse
    makes a span per token, and a tuple is built in a third of the time."""

    line: int
    column: int
    end_line: int
    end_column: int

    @staticmethod
    def point(line: int, column: int) -> Span:
        return Span(line, column, line, column + 1)

    def to(self, other: Span) -> Span:
        """The span from the start of `self` to the end of `other`."""
        return Span(self.line, self.column, other.end_line, other.end_column)

    def sort_key(self) -> tuple[int, int]:
        return (self.line, self.column)


NO_SPAN = Span(1, 1, 1, 1)


@dataclass(frozen=True)
class SourceFile:
    path: str
    text: str
    _line_starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        starts = [0]
        starts.extend(m.end() for m in re.finditer("\n", self.text))
        object.__setattr__(self, "_line_starts", tuple(starts))

    def line_text(self, line: int) -> str:
        if line < 1 or line > len(self._line_starts):
            return ""
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start : end if end >= 0 else len(self.text)].rstrip("\r")

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column) of a character offset."""
        line = bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    @property
    def line_count(self) -> int:
        return len(self._line_starts)
