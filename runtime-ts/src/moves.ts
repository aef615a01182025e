// `goto` and `back`: a move along a direct edge (`-> TARGET`) of the active leaves, or back
// along a backward edge (`back`) to the most recent earlier state it leads to; each with the
// refusals it meets first, then one step (step.ts).
import { truthy } from "./engine.js";
import type { Instance, StepOptions } from "./instance.js";
import type { Outcome } from "./outcome.js";
import { take } from "./step.js";
import type { Rule } from "./tree.js";

/** Direct edges by target: each active leaf's (its own, then its ancestors'), leaves in
 * document order. */
export function directEdges(inst: Instance): Map<string, Rule[]> {
  const out = new Map<string, Rule[]>();
  for (const leaf of inst.leaves()) {
    for (const [target, edges] of leaf.direct) {
      const have = out.get(target) ?? [];
      out.set(target, [...have, ...edges.filter((t) => !have.includes(t))]);
    }
  }
  return out;
}

function guardWords(rule: Rule | null): string {
  return rule === null ? "a guard" : `the guard of ${rule.describe()}`;
}

export function gotoStep(inst: Instance, target: string, opts: StepOptions): Outcome {
  const m = inst.machine;
  const sem = m.semantics;
  const st = inst.stateNode;
  const ctx = inst.ctxRef();
  if (st.final) return sem.rejection("instance_final", st, null, null, ctx, null);
  const edges = directEdges(inst).get(target);
  const data = { from: st.name, to: target };
  if (edges === undefined) {
    return sem.rejection(m.states.has(target) ? "invalid_transition" : "unknown_state", st, null, null, ctx, data);
  }
  const force = opts.force === true;
  if (!force && edges.every((t) => t.back)) return sem.rejection("backward_requires_force", st, null, null, ctx, data);
  let rule: Rule | null = null;
  try {
    const scope = inst.scope(null);
    for (const t of edges) {
      if (t.back && !force) continue;
      rule = t;
      if (t.guard === null || truthy(m.exec.value(t.guard, ctx, null, t.source, scope))) {
        return take(inst, [t], inst.trigger("goto", null, null, opts));
      }
    }
  } catch (exc) {
    return sem.fault(exc, guardWords(rule), st, null, null, ctx);
  }
  return sem.rejection("guard_failed", st, null, null, ctx, data);
}

export function backStep(inst: Instance, opts: StepOptions): Outcome {
  const sem = inst.machine.semantics;
  const st = inst.stateNode;
  const ctx = inst.ctxRef();
  if (st.final) return sem.rejection("instance_final", st, null, null, ctx, null);
  const edges = [...new Set(inst.leaves().flatMap((s) => s.backEdges))];
  const targets = new Set(edges.map((t) => t.target?.name));
  const previous = [...inst.entriesRef()].reverse().find((e) => e.source !== null && targets.has(e.source))?.source ?? null;
  if (previous === null) return sem.rejection("no_previous_state", st, null, null, ctx, { from: st.name });
  const data = { from: st.name, to: previous };
  if (opts.force !== true) return sem.rejection("backward_requires_force", st, null, null, ctx, data);
  return takeBackEdge(inst, edges, previous, opts) ?? sem.rejection("guard_failed", st, null, null, ctx, data);
}

/** Take the first backward edge to `previous` whose event needs no payload and whose
 * preconditions and guard hold (null: no edge does). */
function takeBackEdge(inst: Instance, edges: Rule[], previous: string, opts: StepOptions): Outcome | null {
  const m = inst.machine;
  const ctx = inst.ctxRef();
  let rule: Rule | null = null;
  try {
    const scope = inst.scope(null);
    for (const t of edges) {
      if (t.target?.name !== previous) continue;
      rule = t;
      let p: unknown = null;
      if (t.kind === "event") {
        const ev = m.events.get(t.event ?? "");
        const empty = ev === undefined ? undefined : m.semantics.emptyPayload(ev);
        if (ev === undefined || empty === undefined) continue; // needs a payload: only `send` takes it
        p = empty;
        if (ev.requires.some((r) => !truthy(m.exec.value(r.guard, ctx, p, inst.stateNode, scope)))) continue;
      }
      if (t.guard === null || truthy(m.exec.value(t.guard, ctx, p, t.source, scope))) {
        return take(inst, [t], inst.trigger("back", t.event, p, opts));
      }
    }
  } catch (exc) {
    return m.semantics.fault(exc, guardWords(rule), inst.stateNode, null, null, ctx);
  }
  return null;
}
