// What an instance accepts now, for tools and prompts: the events some rule could take and
// the states `goto` can reach (runtime/instance.py `accepted_events`, `allowed_targets`).
// Guards that read only the context are judged now; those that read the payload count as
// possible; a `reject` sure to hold now hides the event, and so does a failing precondition.
import type { Instance } from "./instance.js";
import type { Expr } from "./ir.js";
import type { Rule, StateNode } from "./tree.js";
import { truthy } from "./values.js";

/** Whether an expression reads the event's payload (then it cannot be judged without one). */
function readsPayload(node: unknown): boolean {
  if (typeof node !== "object" || node === null) return false;
  const n = node as { op?: unknown; args?: unknown };
  if (n.op === "event") return true;
  return Array.isArray(n.args) && n.args.some(readsPayload);
}

/** A guard judged on the context alone; a fault counts as false. */
function holds(instance: Instance, guard: Expr, state: StateNode): boolean {
  try {
    const value = instance.machine.exec.value(guard, instance.ctxRef(), null, state, instance.scope(null));
    return truthy(value);
  } catch {
    return false;
  }
}

/** The first rule sure to fire: whether it takes the event (true), refuses it (false), or
 * none is sure (null) — rules whose guard reads the payload may or may not fire. */
function firstSure(instance: Instance, candidates: readonly Rule[]): "takes" | "refuses" | "maybe" | "none" {
  for (const t of candidates) {
    if (t.guard !== null && readsPayload(t.guard)) {
      if (t.kind !== "reject") return "maybe";
      continue; // may or may not refuse, depending on the payload
    }
    if (t.guard === null || holds(instance, t.guard, t.source)) return t.kind === "reject" ? "refuses" : "takes";
  }
  return "none";
}

function mayAccept(instance: Instance, state: StateNode, event: string, candidates: readonly Rule[]): boolean {
  const def = instance.machine.events.get(event);
  for (const req of def?.requires ?? []) {
    if (!readsPayload(req.guard) && !holds(instance, req.guard, state)) return false;
  }
  const sure = firstSure(instance, candidates);
  return sure === "takes" || sure === "maybe";
}

/** The names of the events `instance` may accept now, in document order of its leaves. */
export function acceptedEvents(instance: Instance): { name: string }[] {
  const internal = instance.machine.internalEvents;
  const leaves = instance.leaves();
  const out: { name: string }[] = [];
  for (const leaf of leaves) {
    for (const [name, candidates] of leaf.on) {
      if (internal.has(name) || out.some((e) => e.name === name)) continue;
      if (!mayAccept(instance, leaf, name, candidates)) continue;
      // (a `reject` that holds now in another region refuses the whole step)
      const refused = leaves.some((other) => {
        const theirs = other.on.get(name);
        return theirs !== undefined && firstSure(instance, theirs) === "refuses";
      });
      if (!refused) out.push({ name });
    }
  }
  return out;
}

/** The states `goto` can reach now: direct edges whose guard holds (backward edges only with
 * `force`), each active leaf's own and its ancestors', leaves in document order. */
export function allowedTargets(instance: Instance, opts: { force?: boolean } = {}): string[] {
  const direct = new Map<string, Rule[]>();
  for (const leaf of instance.leaves()) {
    for (const [target, edges] of leaf.direct) {
      const have = direct.get(target) ?? [];
      direct.set(target, [...have, ...edges.filter((t) => !have.includes(t))]);
    }
  }
  const force = opts.force === true;
  return [...direct.entries()]
    .filter(([, edges]) => edges.some((t) => (force || !t.back) && (t.guard === null || holds(instance, t.guard, t.source))))
    .map(([target]) => target);
}
