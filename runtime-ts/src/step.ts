// Taking a step: the engine's macrostep on working copies, then the commit (history entry,
// context, configuration, timers, scheduled events) or, if anything refused or faulted, nothing.
import { Macrostep, Microsteps, newOutputs, Refusal, RoutingLoop, rivals, type Ctx } from "./engine.js";
import type { Entry } from "./history.js";
import { StepResult } from "./history.js";
import type { Instance } from "./instance.js";
import type { Rejection } from "./outcome.js";
import { SendRefused, sendsAfter, splitMessages, type Scheduled, type Scheduling } from "./scheduled.js";
import { arm, DelayFault, dueOrder, type Timer } from "./timers.js";
import { byOrder, summaryOf, type Rule, type StateNode } from "./tree.js";

export interface Trigger {
  kind: string;
  event: string | null;
  p: unknown;
  reason: string | null;
  key: string | null;
  /** when the step is recorded (a timer: its deadline); null: the clock's time */
  at: number | null;
  /** a timer's group (`rivals`) due with it, which repeats with it */
  tried: readonly Rule[];
}

/** Where a step faulted, in the Python runtime's words. */
export function faultWords(run: Macrostep, exc: unknown, fallback: string | null): string {
  if (exc instanceof Microsteps) return "the run to completion";
  const taken = run.taken;
  if (taken?.source.choice) return `routing through ${taken.source.name} (${taken.describe()})`;
  const step = run.step;
  if (step !== null && taken !== null) {
    return step.phase !== "actions" ? `the ${step.phase} actions of ${step.state.name}` : `the actions of ${taken.describe()}`;
  }
  if (step !== null) return `the ${step.phase} actions of ${step.state.name}`;
  if (taken !== null) return `the guard of ${taken.describe()}`;
  return fallback ?? "a raised event";
}

/** What ends a macrostep early, as the step's rejection. */
export function stepRefused(inst: Instance, run: Macrostep, exc: unknown, st: StateNode, trig: Trigger, fallback: string | null): Rejection {
  const sem = inst.machine.semantics;
  const ctx = inst.ctxRef();
  if (exc instanceof Refusal) return sem.refused(exc.rule, exc.payload, st, trig.event, ctx, run);
  if (exc instanceof RoutingLoop) {
    return sem.rejection("routing_loop", st, trig.event, trig.p, ctx, { path: exc.path, node: exc.node });
  }
  return sem.fault(exc, faultWords(run, exc, fallback), st, trig.event, trig.p, ctx);
}

/** A step that ends in a choice state none of whose routes holds. */
export function stuck(inst: Instance, run: Macrostep, st: StateNode, trig: Trigger): Rejection | null {
  for (const s of run.config) {
    if (s.choice) return inst.machine.semantics.rejection("guard_failed", st, trig.event, trig.p, inst.ctxRef(), { from: s.name, to: null });
  }
  return null;
}

function repeats(t: Rule): boolean {
  return t.kind === "timer" && t.internal;
}

/** Take the transitions `ts` from the instance's configuration and run to completion. */
export function take(inst: Instance, ts: Rule[], trig: Trigger): StepResult | Rejection {
  const m = inst.machine;
  const st = inst.stateNode;
  const c: Ctx = m.semantics.copy(inst.ctxRef());
  const run = new Macrostep(inst.configRef(), inst.historiesRef(), c, m.exec, newOutputs());
  run.p = trig.p;
  run.event = trig.event;
  try {
    run.microstep(ts.length > 1 ? run.resolve(ts) : ts, trig.p);
    run.settle();
  } catch (exc) {
    return stepRefused(inst, run, exc, st, trig, null);
  }
  const blocked = m.exec.eventless ? stuck(inst, run, st, trig) : null;
  if (blocked !== null) return blocked;
  const now = trig.at ?? inst.nowMs();
  const config = [...run.config].sort(byOrder);
  const dest = summaryOf(config);
  const kept: Timer[] = inst.timersRef().filter(([, x]) => !run.exited.has(x.source));
  let rules = config.filter((s) => run.entered.has(s)).flatMap((s) => s.timers);
  const only = ts.length === 1 ? ts[0] : undefined;
  if (only !== undefined && repeats(only) && !run.exited.has(only.source)) {
    rules = [...rules, ...(trig.tried.length > 0 ? trig.tried : [only])];
  }
  try {
    kept.push(...arm(rules, now, m.exec, c, run));
  } catch (exc) {
    if (!(exc instanceof DelayFault)) throw exc;
    return m.semantics.fault(exc.fault, exc.where, st, trig.event, trig.p, inst.ctxRef());
  }
  let sends = inst.sendsRef();
  const [scheduled, messages] = splitMessages(run.outputs.scheduled);
  if (scheduled.length > 0 || run.final) {
    try {
      sends = pendingSends(inst, run, scheduled, now, inst.seq + 1);
    } catch (exc) {
      if (!(exc instanceof SendRefused)) throw exc;
      return m.semantics.fault(exc.fault, exc.where, st, trig.event, trig.p, inst.ctxRef());
    }
  }
  const seq = inst.seq + 1;
  const before = inst.leafNames();
  const after = config.filter((s) => s.atomic).map((s) => s.name);
  const entry: Entry = {
    seq, at: now, kind: trig.kind, source: st.name, target: dest.name, event: trig.event,
    payload: trig.p, reason: trig.reason, via: [...run.via],
    leaves: st.atomic && dest.atomic ? null : [before, after],
  };
  inst.commit(entry, c, config, run.histories, [dueOrder(kept), sends], trig.key);
  const names = m.chart ? config.map((s) => s.name) : null;
  const result = new StepResult(entry, c, names, [...run.fired], run.outputs.effects, false, m.journaller);
  // (subscribers hear of a step as it commits, as in Python; with `checkInvariants`, once it
  // stands: invariants.ts)
  if (!m.checkInvariants) inst.notify(result);
  // a node of a tree of instances: children start and stop, messages queue (src/children.ts)
  inst.tree?.committed(run, config, messages, now, result);
  return result;
}

/** The scheduled events after the macrostep `run` (step `seq`, at `now`); throws a
 * `SendRefused`. */
export function pendingSends(inst: Instance, run: Macrostep, scheduled: readonly Scheduling[], now: number, seq: number): Scheduled[] {
  const exec = inst.machine.exec;
  return sendsAfter(inst.sendsRef(), scheduled, run.final, now, seq, (e, p) => exec.scheduledPayload(e, p));
}

/** After a timer step: the timers due with the one taken but not tried stay pending (tried
 * next, at the same deadline) when their state is still active, they are not of the taken
 * timer's group and are not pending already: a deadline beside a repeating timer fires. */
export function keepUntried(inst: Instance, taken: Rule, rest: readonly Rule[], due: number): void {
  const config = new Set(inst.configRef());
  const timers = inst.timersRef();
  const pending = new Set(timers.map(([, x]) => x));
  const keep: Timer[] = rest
    .filter((x) => !rivals(x, taken) && config.has(x.source) && !pending.has(x))
    .map((x) => [due, x]);
  if (keep.length > 0) inst.setTimers(dueOrder([...timers, ...keep]));
}
