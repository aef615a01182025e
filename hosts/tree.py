"""What hosts show of a tree of instances (child flows, `flowc.runtime.children`): every child
below an instance with its path, and the tree as nested JSON objects. `flowc instances show`,
`flowc run` and `flowc mcp` share these, so a child is named the same way everywhere: by its
path of child ids from the root, `/` between levels (`pay.1`, `reviews.1.0/fraud.3`), which is
what `Instance.child` and `DurableFlows.send(..., child=PATH)` take."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from flowc.runtime import Instance


def descendants(instance: Instance) -> Iterator[tuple[str, Instance]]:
    """(path, child) for every child below `instance`, each parent before its children,
    children in start order."""
    for cid, kid in instance.children.items():
        yield cid, kid
        for path, deeper in descendants(kid):
            yield f"{cid}/{path}", deeper


def tree_view(
    instance: Instance, extra: Callable[[Instance], dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The children of `instance`, nested: each `{"id", "flow", "state", "ended"}`, with
    `extra(child)`'s keys (`flowc mcp`: what a model may read of its context), then its own
    `children` when it has some. `ended`: the child reached a final state (its parent has not
    left the invoking state yet)."""
    out: list[dict[str, Any]] = []
    for cid, kid in instance.children.items():
        view: dict[str, Any] = {
            "id": cid,
            "flow": kid.machine.name,
            "state": kid.state,
            "ended": kid.is_final,
        }
        if extra is not None:
            view.update(extra(kid))
        below = tree_view(kid, extra)
        if below:
            view["children"] = below
        out.append(view)
    return out


def last_seqs(instance: Instance) -> dict[str, int]:
    """The seq of the last step of `instance` (path `""`) and of each of its descendants."""
    seqs = {"": instance.seq}
    seqs.update((path, kid.seq) for path, kid in descendants(instance))
    return seqs


def steps_since(
    instance: Instance, before: dict[str, int], shown: set[tuple[str, int]]
) -> list[dict[str, Any]]:
    """The steps the tree of `instance` committed since `before` (`last_seqs`), but those in
    `shown` ((path, seq) pairs already printed): the root's first, then each descendant's in
    `descendants` order (a child started meanwhile: all its steps, its start included), each
    instance's in seq order. Each as its history entry, with the keys of a step's line (`ok`,
    `from`, `to`, `trigger`; no `effects` nor `configuration`, which the history does not
    keep), `child` (its path) for a descendant's, and `final`: whether the root has ended."""
    lines: list[dict[str, Any]] = []
    for path, inst in [("", instance), *descendants(instance)]:
        seen = before.get(path, -1)
        if all((path, seq) in shown for seq in range(seen + 1, inst.seq + 1)):
            continue  # (most operations: nothing but what was printed; the history unread)
        for entry in inst.history:
            if entry.seq <= seen or (path, entry.seq) in shown or entry.kind == "child":
                continue  # (a `child` entry stands for a child's step: printed as the child's)
            data = entry.to_dict()
            line = {"ok": True, "from": data.pop("source"), "to": data.pop("target"), **data}
            line["trigger"] = entry.trigger
            line["final"] = instance.is_final
            if path:
                line["child"] = path
            lines.append(line)
    return lines


def path_of(instance: Instance, target: Instance) -> str | None:
    """The path of `target` below `instance` (None: not in its tree)."""
    return next((path for path, kid in descendants(instance) if kid is target), None)
