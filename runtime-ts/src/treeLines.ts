// What `flowc-run` prints of a tree of instances (child flows; the Python hosts/tree.py and
// `flowc run`'s `_with_tree`): an operation may go to a child (`"child": PATH`), and after the
// operation's own lines comes one line for each other step it committed in the tree.
import { entryJSON } from "./history.js";
import type { Instance } from "./instance.js";
import { UnknownChild } from "./childTree.js";

type Line = Record<string, unknown>;

/** (path, child) for every child below `inst`, each parent before its children, children in
 * start order. */
export function descendants(inst: Instance): [string, Instance][] {
  return Object.entries(inst.children).flatMap(([cid, kid]): [string, Instance][] => [
    [cid, kid],
    ...descendants(kid).map(([path, deeper]): [string, Instance] => [`${cid}/${path}`, deeper]),
  ]);
}

/** The seq of the last step of `inst` (path "") and of each of its descendants. */
export function lastSeqs(inst: Instance): Map<string, number> {
  return new Map([["", inst.seq], ...descendants(inst).map(([path, kid]): [string, number] => [path, kid.seq])]);
}

/** An operation's `child`: the path of the child flow it goes to; a TypeError when bad. */
export function childOf(op: Line): string | null {
  const child = op.child;
  if (child === undefined || child === null) return null;
  if (typeof child !== "string" || child === "") throw new TypeError("`child` must be a path of child ids (`pay.1`, `reviews[0]/fraud`)");
  if ("advance" in op) throw new TypeError("`child` goes with `event`, `goto` or `back`: `advance` fires the tree");
  return child;
}

/** The path of child ids `child` names now (`pay` -> `pay.1`), or as given. */
export function childPath(root: Instance, child: string): string {
  try {
    const target = root.child(child);
    return descendants(root).find(([, kid]) => kid === target)?.[0] ?? child;
  } catch (exc) {
    if (exc instanceof UnknownChild) return child;
    throw exc;
  }
}

/** An operation's lines (of the root's steps, or with `path` of its child's), then the other
 * steps the operation committed in the tree. */
export function withTree(root: Instance, lines: Line[], before: Map<string, number>, path: string): Line[] {
  const shown = new Set<string>();
  for (const line of lines) {
    if (path !== "") {
      delete line.child; // (an `unknown_child` rejection has one: it goes last)
      line.child = path;
    }
    if (line.ok === true && typeof line.seq === "number") shown.add(`${path}\n${String(line.seq)}`);
  }
  return [...lines, ...stepsSince(root, before, shown)];
}

/** The steps the tree committed since `before`, but those `shown`: the root's first, then each
 * descendant's, each instance's in seq order, as history entries with a step line's keys. */
function stepsSince(root: Instance, before: Map<string, number>, shown: Set<string>): Line[] {
  const lines: Line[] = [];
  for (const [path, inst] of [["", root] as [string, Instance], ...descendants(root)]) {
    const seen = before.get(path) ?? -1;
    for (const entry of inst.entriesRef()) {
      // (a `child` entry stands for a child's step: printed as the child's)
      if (entry.seq <= seen || shown.has(`${path}\n${String(entry.seq)}`) || entry.kind === "child") continue;
      const { source, target, ...rest } = inst.machine.semantics.plain(entryJSON(entry)) as Line;
      const line: Line = { ok: true, from: source, to: target, ...rest, trigger: entry.event ?? entry.kind, final: root.isFinal };
      if (path !== "") line.child = path;
      lines.push(line);
    }
  }
  return lines;
}
