// `Instance.send`: the refusals an event meets before any rule is taken (an `internal` event
// from a host, final instance,
// unknown or unhandled event, invalid payload, unmet precondition, guards, `reject` rules,
// backward rules without force), then the step. Every active leaf in document order offers
// its first enabled rule (its own, then its ancestors'); conflicts are resolved by the engine.
import { truthy } from "./engine.js";
import type { EventDef } from "./ir.js";
import type { Instance, StepOptions } from "./instance.js";
import type { Outcome, Rejection } from "./outcome.js";
import { take } from "./step.js";
import type { Rule, StateNode } from "./tree.js";

function unhandled(inst: Instance, st: StateNode, ev: EventDef, payload: unknown): Rejection {
  const sem = inst.machine.semantics;
  const ctx = inst.ctxRef();
  if (inst.leaves().every((leaf) => leaf.ignores)) {
    const checked = sem.checkPayload(st, ev, payload, ctx);
    if (!checked.ok) return checked.rejection;
    return sem.rejection("ignored", st, ev.name, null, ctx, null);
  }
  return sem.rejection("event_not_accepted", st, ev.name, null, ctx, null);
}

/** The refusal of the first precondition of `ev` that does not hold, or null. */
function unmet(inst: Instance, st: StateNode, ev: EventDef, p: unknown): Rejection | null {
  const m = inst.machine;
  const ctx = inst.ctxRef();
  const scope = inst.scope(ev.name);
  for (const req of ev.requires) {
    let holds: boolean;
    try {
      holds = truthy(m.exec.value(req.guard, ctx, p, st, scope));
    } catch (exc) {
      return m.semantics.fault(exc, `the precondition ${req.code} of ${ev.name}`, st, ev.name, p, ctx);
    }
    if (!holds) {
      return m.semantics.refusal("require", req.code, req.message, req.data ?? null, null, st, ev.name, p, ctx,
        `the data of the precondition ${req.code} of ${ev.name}`);
    }
  }
  return null;
}

/** Each handled leaf's first rule whose guard holds (no duplicates), or a guard's fault. */
function enabledRules(inst: Instance, handled: StateNode[], event: string, p: unknown): Rule[] | Rejection {
  const m = inst.machine;
  const ctx = inst.ctxRef();
  const scope = inst.scope(event);
  const enabled: Rule[] = [];
  let rule: Rule | null = null;
  try {
    for (const leaf of handled) {
      for (const t of leaf.on.get(event) ?? []) {
        rule = t;
        if (t.guard === null || truthy(m.exec.value(t.guard, ctx, p, t.source, scope))) {
          if (!enabled.includes(t)) enabled.push(t);
          break;
        }
      }
    }
  } catch (exc) {
    const where = rule === null ? "a guard" : `the guard of ${rule.describe()}`;
    return m.semantics.fault(exc, where, inst.stateNode, event, p, ctx);
  }
  return enabled;
}

/** `send` on the general path. `at`: a scheduled event's delivery (the flow's own send,
 * recorded at its deadline as a step of kind `scheduled`), or a message from a parent or
 * child (`kind` `message`: src/children.ts), which alone may send an `internal` event. */
export function sendEvent(inst: Instance, event: string, payload: unknown, opts: StepOptions, at: number | null = null, kind = "scheduled"): Outcome {
  const m = inst.machine;
  const sem = m.semantics;
  const st = inst.stateNode;
  const ctx = inst.ctxRef();
  if (at === null && m.ownEvents.has(event)) return sem.rejection("internal_event", st, event, null, ctx, null);
  if (st.final) return sem.rejection("instance_final", st, event, null, ctx, null);
  const ev = m.events.get(event);
  if (ev === undefined || m.internalEvents.has(event)) return sem.rejection("unknown_event", st, event, null, ctx, null);
  const handled = inst.leaves().filter((leaf) => leaf.on.has(event));
  if (handled.length === 0) return unhandled(inst, st, ev, payload);
  const checked = sem.checkPayload(st, ev, payload, ctx);
  if (!checked.ok) return checked.rejection;
  const p = checked.value;
  const refused = unmet(inst, st, ev, p);
  if (refused !== null) return refused;
  const enabled = enabledRules(inst, handled, event, p);
  if (!Array.isArray(enabled)) return enabled;
  for (const t of enabled) {
    if (t.target === null) {
      return sem.refusal("reject", t.def.code ?? "reject", t.def.message, t.def.data, t.index, t.source, event, p, ctx,
        `the data of ${t.describe()}`, st);
    }
  }
  if (enabled.length === 0) return sem.rejection("guard_failed", st, event, p, ctx, null);
  if (opts.force !== true) {
    const back = enabled.find((t) => t.back);
    if (back !== undefined) {
      return sem.rejection("backward_requires_force", st, event, p, ctx, { from: st.name, to: back.target?.name ?? null });
    }
  }
  // (a delivery is recorded as a step of its own kind: a replay delivers it again by `advance`)
  return take(inst, enabled, inst.trigger(at === null ? "event" : kind, event, p, opts, at));
}
