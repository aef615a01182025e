// What an instance offers now, without taking a step: the events it may accept (for tool
// lists and forms) and the states `goto` can reach (Python's `accepted_events`,
// `allowed_targets`). Guards that read only the context are judged now; those that read the
// payload count as possible.
import { truthy, type StepScope } from "./engine.js";
import { IRLoadError } from "./ir.js";
import type { Expr, EventDef } from "./ir.js";
import type { Instance } from "./instance.js";
import { directEdges } from "./moves.js";
import type { Rule, StateNode } from "./tree.js";

function mentionsEvent(node: unknown): boolean {
  if (typeof node !== "object" || node === null || Array.isArray(node)) return false;
  const n = node as { op?: unknown; args?: unknown };
  if (n.op === "event") return true;
  return Array.isArray(n.args) && n.args.some(mentionsEvent);
}

/** Whether `guard` holds now (one that faults does not). */
function holds(inst: Instance, guard: Expr, state: StateNode, scope: StepScope): boolean {
  try {
    return truthy(inst.machine.exec.value(guard, inst.ctxRef(), null, state, scope));
  } catch (exc) {
    if (exc instanceof IRLoadError) throw exc;
    return false;
  }
}

function mayAccept(inst: Instance, ev: EventDef, candidates: readonly Rule[], scope: StepScope): boolean {
  for (const req of ev.requires) {
    if (!mentionsEvent(req.guard) && !holds(inst, req.guard, inst.stateNode, scope)) return false;
  }
  for (const t of candidates) {
    if (t.guard !== null && mentionsEvent(t.guard)) {
      if (t.kind !== "reject") return true;
      continue; // may or may not refuse, depending on the payload
    }
    if (t.guard === null || holds(inst, t.guard, t.source, scope)) return t.kind !== "reject";
  }
  return false;
}

/** Whether candidates refuse the event now whatever the payload. */
function refuses(inst: Instance, candidates: readonly Rule[], scope: StepScope): boolean {
  for (const t of candidates) {
    if (t.guard !== null && mentionsEvent(t.guard)) {
      if (t.kind !== "reject") return false;
      continue;
    }
    if (t.guard === null || holds(inst, t.guard, t.source, scope)) return t.kind === "reject";
  }
  return false;
}

/** The events the instance may accept now, active leaves in document order. */
export function acceptedEvents(inst: Instance): { name: string }[] {
  const m = inst.machine;
  const leaves = inst.leaves();
  const scope = inst.scope(null);
  const out: { name: string }[] = [];
  for (const leaf of leaves) {
    for (const [name, candidates] of leaf.on) {
      const ev = m.events.get(name);
      if (ev === undefined || m.internalEvents.has(name) || m.ownEvents.has(name) || out.some((a) => a.name === name)) continue;
      if (!mayAccept(inst, ev, candidates, scope)) continue;
      // (a `reject` that holds now in another region refuses the whole step)
      if (leaves.some((other) => refuses(inst, other.on.get(name) ?? [], scope))) continue;
      out.push({ name });
    }
  }
  return out;
}

/** The states `goto` can reach now (backward edges only with `force`). */
export function allowedTargets(inst: Instance, force: boolean): string[] {
  const scope = inst.scope(null);
  const out: string[] = [];
  for (const [target, edges] of directEdges(inst)) {
    if (edges.some((t) => (force || !t.back) && (t.guard === null || holds(inst, t.guard, t.source, scope)))) out.push(target);
  }
  return out;
}
