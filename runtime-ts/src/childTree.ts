// What a host sees of a tree of instances (src/children.ts; runtime/children.py's host calls):
// a call on any instance of the tree delivers the inbox afterwards, the root's `advance` fires
// every timer of the tree in deadline order, `child(path)` finds a descendant, and the root's
// snapshot holds the whole tree (format flowc.snapshot/4, the Python runtime's JSON).
import type { Macrostep } from "./engine.js";
import { StepResult } from "./history.js";
import { Instance } from "./instance.js";
import type { Machine } from "./machine.js";
import type { Outcome } from "./outcome.js";
import type { Scheduling } from "./scheduled.js";
import { SNAPSHOT_FORMAT_4, SnapshotError } from "./snapshot.js";
import { deliverTo, forwarded, messageJSON, messageOf, Join, Node, type Place } from "./children.js";
import type { StateNode } from "./tree.js";

/** Give a new instance its node (`place`: a child's; null: a root) and do what its start's
 * step does to the tree. */
export function attach(inst: Instance, place: Place | null, run: Macrostep, config: readonly StateNode[], sent: readonly Scheduling[], now: number): void {
  const node = place === null ? new Node(inst, null, [], null, null) : new Node(inst, place.up, place.path, place.invoke, place.index);
  if (place === null) node.log = []; // (what the start leads to: `settleStart`)
  inst.tree = node;
  node.committed(run, config, sent, now, null);
}

/** After a root's start: the inbox delivered, and what its children did recorded in its
 * history (entries of kind `child`); their effects join the start's. */
export function settleStart(inst: Instance): void {
  const node = inst.tree;
  if (node === null) return;
  node.busy = true;
  try {
    node.drain();
    // (its children's starts and steps, as their entries carry their effects)
    const log = node.log ?? [];
    inst.startEffects = [...inst.startEffects, ...log.flatMap((s) => s.effects)];
  } finally {
    node.busy = false;
    node.log = null;
  }
}

/** A host's call on an instance of a tree: the step, then (for an event the instance took)
 * forwarding, then the inbox delivered. */
export function hostStep<T extends Outcome | Outcome[]>(inst: Instance, step: () => T, event: string | null): T {
  const node = inst.tree;
  if (node === null || node.root.busy) return step();
  const root = node.root;
  root.busy = true;
  root.log = [];
  try {
    const out = step();
    if (event !== null && !Array.isArray(out)) forwarded(inst, out);
    root.drain();
    // what else the call committed in the tree: a step's `then`; `advance`'s outcomes (every
    // step of the root, its refusals after)
    const then = root.log.filter((s) => s !== out);
    if (out instanceof StepResult) out.then = then;
    else if (Array.isArray(out)) out.splice(0, out.length, ...then, ...out.filter((o) => !o.ok));
    return out;
  } finally {
    root.busy = false;
    root.log = null;
  }
}

/** As if the current children of `invoke` had finished with `payload` as the done event's
 * (or failed with it as the error event's): they are cancelled and the event delivered, then
 * the inbox (what `flowc paths` and the vectors' `end_invoke` do to treat a child as a black
 * box). Null when the invoke has no current children; a refused event leaves them running. */
export function endInvoke(inst: Instance, invoke: string, payload: Record<string, unknown> | null, failed = false): Outcome | null {
  const node = inst.tree;
  const join = node?.joins.get(invoke);
  if (node === null || join === undefined) return null;
  const root = node.root;
  root.busy = true;
  try {
    const entries = inst.entriesRef();
    const event = `${failed ? "error" : "done"}.invoke.${invoke}`;
    const out = deliverTo(inst, event, payload, entries[entries.length - 1]?.at ?? 0);
    // (taken without leaving the state: they are done all the same)
    if (out instanceof StepResult && node.joins.get(invoke) === join) node.cancel(invoke);
    root.drain();
    return out;
  } finally {
    root.busy = false;
  }
}

/** Fire every timer and scheduled event of the tree due at `when`, earliest first (ties:
 * parents before children), delivering the inbox after each; the root's steps, in order. */
export function advanceTree(root: Node, when: number): Outcome[] {
  const out: Outcome[] = [];
  root.drain(); // (what an earlier call left past the bound: once, as any call delivers)
  for (;;) {
    const due = earliest(root, false);
    if (due === null || due[0] > when) break;
    const fired = due[1].fireDue(due[0]);
    for (const step of fired) {
      forwarded(due[1], step);
      if (!step.ok && due[1] === root.inst) out.push(step); // (a refused timer of the root)
    }
    root.drain();
  }
  root.drain();
  return out;
}

/** The earliest deadline in the tree and the instance it belongs to; with `inbox`, messages
 * a call left past `MAX_DELIVERIES` are due at once (at the root's last step), so that the
 * next `advance` delivers them. */
export function earliest(node: Node, inbox = true): [number, Instance] | null {
  let best: [number, Instance] | null = null;
  if (inbox && node.up === null && node.inbox.length > 0) {
    const entries = node.inst.entriesRef();
    best = [entries[entries.length - 1]?.at ?? 0, node.inst];
  }
  for (const n of node.walk()) {
    const inst = n.inst;
    if (inst.isFinal) continue;
    for (const due of [inst.timersRef()[0]?.[0], inst.sendsRef()[0]?.due]) {
      if (due !== undefined && (best === null || due < best[0])) best = [due, inst];
    }
  }
  return best;
}

/** `Instance.child` of a path that names no descendant. */
export class UnknownChild extends Error {
  override name = "UnknownChild";
  constructor(readonly path: string) {
    super(`no child '${path}'`);
  }
}

/** The descendant at `path` (`/` between levels); throws `UnknownChild`. */
export function childAt(inst: Instance, path: string): Instance {
  return path.split("/").reduce<Instance>((at, part) => {
    const found = findChild(at, part);
    if (found === null) throw new UnknownChild(path);
    return found;
  }, inst);
}

/** One level of `Instance.child`: a child id, an invoke's id (its current child), or `ID[K]`
 * (a fan-out's child at position K). */
export function findChild(inst: Instance, part: string): Instance | null {
  const node = inst.tree;
  if (node === null) return null;
  const direct = node.kids.get(part);
  if (direct !== undefined) return direct;
  let invoke = part;
  let index: number | null = null;
  if (part.endsWith("]") && part.includes("[")) {
    const open = part.indexOf("[");
    const k = part.slice(open + 1, -1);
    if (!/^[0-9]+$/.test(k)) return null;
    invoke = part.slice(0, open);
    index = Number(k);
  }
  const join = node.joins.get(invoke);
  if (join === undefined || (join.fan && index === null)) return null;
  const cid = join.fan ? `${invoke}.${String(join.seq)}.${String(index)}` : `${invoke}.${String(join.seq)}`;
  return node.kids.get(cid) ?? null;
}

/** A tree's part of an instance's snapshot: its children (each with its own snapshot), its
 * joins, and at the root the inbox; format /4 when it has any. */
export function snapshotInto(node: Node, snap: Record<string, unknown>): void {
  const kids = [...node.kids].map(([id, kid]) => ({ id, invoke: kid.tree?.invoke ?? null, index: kid.tree?.index ?? null, snapshot: kid.snapshot() }));
  const inbox = node.up === null ? node.inbox.map(messageJSON) : [];
  if (kids.length === 0 && node.joins.size === 0 && inbox.length === 0) return;
  snap.format = SNAPSHOT_FORMAT_4;
  snap.children = kids;
  snap.joins = [...node.joins.values()].map((j) => j.toJSON());
  if (inbox.length > 0) snap.inbox = inbox;
}

/** Give a restored instance its node, and restore its children, joins and inbox. */
export function restoreTree(inst: Instance, data: Record<string, unknown>, place: Place | null, restore: RestoreChild): void {
  const node = place === null ? new Node(inst, null, [], null, null) : new Node(inst, place.up, place.path, place.invoke, place.index);
  inst.tree = node;
  const m = inst.machine;
  try {
    for (const raw of listOf(data.joins)) {
      const join = Join.of(raw);
      node.joins.set(join.invoke, join);
    }
    for (const raw of listOf(data.children)) {
      const r = raw as Record<string, unknown>;
      const cid = String(r.id);
      const inv = m.invokes.get(String(r.invoke));
      if (inv === undefined) throw new TypeError(`no invoke ${JSON.stringify(r.invoke)}`);
      const index = typeof r.index === "number" ? r.index : null;
      const where: Place = { up: node, path: [...node.path, cid], invoke: inv.id, index };
      node.kids.set(cid, restore(m.childMachine(inv.flow), r.snapshot as object, inst, where));
    }
    if (place === null) node.inbox.push(...listOf(data.inbox).map(messageOf));
  } catch (exc) {
    if (!(exc instanceof TypeError || exc instanceof RangeError)) throw exc;
    throw new SnapshotError(`the snapshot's children of ${m.name} cannot be restored: ${exc.name}: ${exc.message}`);
  }
}

/** Restores one child (snapshot.ts gives it: this module does not import it). */
export type RestoreChild = (m: Machine, snapshot: object, parent: Instance, place: Place) => Instance;

function listOf(v: unknown): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new TypeError("not a list");
  return v;
}
