"""Re-parsing only the declaration an edit touched.

An editor sends the whole text after every keystroke, and parsing is most of a compile. Most
edits change a few lines inside one top-level declaration (a state, an event…) and leave the
line count alone; then every other declaration of the previous parse is still exactly right,
spans included. The edited declaration's lines are parsed alone, behind as many blank lines as
precede them so that the positions come out the same, and spliced in. The grammar makes this
sound: the file is a sequence of items, each starting with its keyword.

Whenever that does not hold (line count changed, an edit outside or across declarations, a
region that does not parse cleanly on its own, a previous parse with errors) the answer is
None, and the caller parses the whole file: its error recovery and messages stay the only
ones users see.
"""

from __future__ import annotations

from flowc.compiler import ast
from flowc.compiler.parse import parse_source


def reparse(old_text: str, old_module: ast.Module, new_text: str) -> ast.Module | None:
    """The module of `new_text`, from `old_module` (a clean parse of `old_text`), or None."""
    old_lines = old_text.split("\n")
    new_lines = new_text.split("\n")
    if len(old_lines) != len(new_lines) or old_text == new_text:
        return None
    first, last = _changed_lines(old_lines, new_lines)
    decls = old_module.decls
    starts = [d.span.line for d in decls]
    for k, decl in enumerate(decls):
        begin = starts[k]
        end = starts[k + 1] - 1 if k + 1 < len(decls) else len(old_lines)
        if not (begin <= first and last <= end):
            continue
        # Each boundary line must hold nothing before the declaration that starts on it.
        if old_lines[begin - 1][: decl.span.column - 1].strip():
            return None
        if k + 1 < len(decls):
            following = decls[k + 1]
            if old_lines[following.span.line - 1][: following.span.column - 1].strip():
                return None
        if k > 0 and decls[k - 1].span.end_line >= begin:
            return None
        region = "\n" * (begin - 1) + "\n".join(new_lines[begin - 1 : end])
        parsed = parse_source(region)
        if parsed.module is None or parsed.diagnostics:
            return None
        return ast.Module((*decls[:k], *parsed.module.decls, *decls[k + 1 :]))
    return None


def _changed_lines(old_lines: list[str], new_lines: list[str]) -> tuple[int, int]:
    """The first and last lines (1-based) that differ between two texts of as many lines, at
    least one of which differs."""
    first = 0
    while old_lines[first] == new_lines[first]:
        first += 1
    last = len(old_lines) - 1
    while old_lines[last] == new_lines[last]:
        last -= 1
    return first + 1, last + 1
