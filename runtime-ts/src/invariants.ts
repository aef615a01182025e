// `checkInvariants` (Python's `Machine(check_invariants=True)`): a committed step that leaves
// the context breaking one of the flow's invariants is undone and refused
// (`invariant_violated`); `advance` is judged as a whole.
import { StepResult } from "./history.js";
import type { Instance } from "./instance.js";
import type { Outcome } from "./outcome.js";
import { restoreTreeOf } from "./snapshot.js";

/** The invariants that do not hold now (one that faults does not hold). */
export function brokenInvariants(inst: Instance): string[] {
  const m = inst.machine;
  const scope = inst.scope(null);
  return m.flow.invariants
    .filter((inv) => {
      try {
        return m.exec.value(inv.expr, inst.ctxRef(), null, inst.stateNode, scope) !== true;
      } catch {
        return true;
      }
    })
    .map((inv) => inv.name);
}

/** Run `step`; undo it and answer `invariant_violated` if it broke an invariant (with
 * `checkInvariants`); then tell the subscribers of the steps that stand. */
export function guarded<T extends Outcome | Outcome[]>(inst: Instance, event: string | null, step: () => T): T {
  // (without the check, subscribers hear of each step as it commits: step.ts)
  if (!inst.machine.checkInvariants) return step();
  const saved = inst.save();
  // a root's children, joins and inbox, as its snapshot has them (a step changes them in
  // place: a refusal puts them back from here)
  const tree = inst.tree?.up === null ? inst.snapshot() : null;
  const out = step();
  const outcomes: Outcome[] = Array.isArray(out) ? out : [out];
  const done = outcomes.filter((r): r is StepResult => r instanceof StepResult && !r.replayed);
  const last = done[done.length - 1];
  if (last === undefined) return out;
  const broken = brokenInvariants(inst);
  if (broken.length === 0) {
    for (const r of done) inst.notify(r);
    return out;
  }
  inst.undo(saved);
  if (tree !== null) restoreTreeOf(inst, tree);
  const refused = inst.machine.semantics.rejection("invariant_violated", inst.stateNode, event, null, inst.ctxRef(), { invariants: broken, to: last.to });
  return (Array.isArray(out) ? [refused] : refused) as T;
}
