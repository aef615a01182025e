// Shared vectors (`flowc.vectors/1`, written by `flowc vectors`): run a vector on this
// runtime and say where it differs from what the Python runtime recorded.
import { FakeClock } from "./clock.js";
import { StepResult } from "./history.js";
import { UnknownChild, type Instance } from "./instance.js";
import { endInvoke } from "./childTree.js";
import { Machine } from "./machine.js";
import type { Outcome } from "./outcome.js";

export interface Expect {
  line: Record<string, unknown>;
  state?: string;
  configuration?: string[];
  context?: Record<string, unknown>;
  final?: boolean;
  effects?: unknown[];
  journals?: Record<string, string>;
}

/** `child`: the op is made on the descendant at that path (`Instance.child`); none there:
 * the rejection `unknown_child`. */
export type Op =
  | { op: "send"; event: string; payload: Record<string, unknown> | null; force: boolean; reason: string | null; key: string | null; child?: string | null; expect: Expect }
  | { op: "goto"; target: string; force: boolean; reason: string | null; child?: string | null; expect: Expect }
  | { op: "back"; force: boolean; reason: string | null; child?: string | null; expect: Expect }
  | { op: "advance"; ms: number; child?: string | null; expect: Expect[] }
  | { op: "end_invoke"; invoke: string; payload: Record<string, unknown> | null; failed: boolean; child?: string | null; expect: Expect };

export interface Vector {
  name: string;
  origin: string;
  now: number;
  context: Record<string, unknown> | null;
  start: Expect;
  ops: Op[];
  snapshot?: { after: number; data: Record<string, unknown> };
}

export interface VectorFile {
  format: string;
  flow: string;
  source: string;
  ir: Record<string, unknown>;
  vectors: Vector[];
}

/** JSON as the other runtime reads it back. */
export function asJson(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? Number(v) : v))) as unknown;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(sorted(asJson(a))) === JSON.stringify(sorted(asJson(b)));
}

function sorted(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sorted);
  if (typeof v === "object" && v !== null) {
    return Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, x]) => [k, sorted(x)]));
  }
  return v;
}

/** What `flowc run` prints for one outcome (`final`: after the whole operation). */
export function outcomeLine(outcome: Outcome, inst: Instance): Record<string, unknown> {
  const data = outcome.toJSON();
  if (outcome instanceof StepResult) data.final = inst.isFinal;
  return data;
}

function compare(where: string, expect: Expect, line: Record<string, unknown>, inst: Instance, effects: unknown[], out: string[], outcome?: Outcome): void {
  const got: Record<string, unknown> = {
    line, state: inst.state, configuration: inst.configuration, context: inst.context, final: inst.isFinal, effects,
  };
  for (const [key, want] of Object.entries(expect)) {
    if (key === "journals") got.journals = journalsOf(outcome);
    if (!same(got[key], want)) {
      out.push(`${where}: ${key} differs:\n  want ${JSON.stringify(sorted(asJson(want)))}\n  got  ${JSON.stringify(sorted(asJson(got[key])))}`);
    }
  }
}

function journalsOf(outcome: Outcome | undefined): unknown {
  try {
    return outcome instanceof StepResult ? outcome.journals() : null;
  } catch (exc) {
    return `a journal failed: ${String(exc)}`;
  }
}

/** Apply one op (the clock moves for `advance`); its outcomes. */
export function applyOp(inst: Instance, clock: FakeClock, op: Op): Outcome[] {
  const path = op.child ?? null;
  if (path === null || op.op === "advance") return applyTo(inst, clock, op);
  return [inst.onChild(path, (child) => applyTo(child, clock, op)[0] as Outcome, eventOf(op))];
}

function eventOf(op: Op): string | null {
  if (op.op === "send") return op.event;
  return op.op === "end_invoke" ? `${op.failed ? "error" : "done"}.invoke.${op.invoke}` : null;
}

function applyTo(inst: Instance, clock: FakeClock, op: Op): Outcome[] {
  switch (op.op) {
    case "send":
      return [inst.send(op.event, op.payload, { force: op.force, reason: op.reason, key: op.key })];
    case "goto":
      return [inst.goto(op.target, { force: op.force, reason: op.reason })];
    case "back":
      return [inst.back({ force: op.force, reason: op.reason })];
    case "advance":
      clock.advance(op.ms);
      return inst.advance();
    case "end_invoke": {
      // (the invoke has no current children: refused as a child that is not there)
      const ended = endInvoke(inst, op.invoke, op.payload, op.failed);
      return [ended ?? inst.onChild(op.invoke, () => { throw new UnknownChild(op.invoke); }, eventOf(op))];
    }
  }
}

/** Run ops[from..] on `inst`, comparing each outcome with its expect. */
export function runOps(inst: Instance, clock: FakeClock, ops: Op[], from: number, out: string[]): void {
  for (let i = from; i < ops.length; i++) {
    const op = ops[i];
    if (op === undefined) continue;
    const outcomes = applyOp(inst, clock, op);
    const expects = op.op === "advance" ? op.expect : [op.expect];
    if (outcomes.length !== expects.length) {
      out.push(`op ${i + 1} (${op.op}): ${outcomes.length} outcomes, want ${expects.length}`);
      continue;
    }
    outcomes.forEach((o, j) => {
      const expect = expects[j];
      const effects = o instanceof StepResult ? o.effects : [];
      if (expect !== undefined) compare(`op ${i + 1} (${op.op}) outcome ${j + 1}`, expect, outcomeLine(o, inst), inst, effects, out, o);
    });
  }
}

/** The clock's time after op `k` (0: the start). */
export function timeAfter(v: Vector, k: number): number {
  let ms = v.now;
  for (const op of v.ops.slice(0, k)) if (op.op === "advance") ms += op.ms;
  return ms;
}

/** Run a vector from its start; the differences found (empty: it passes). */
export function runVector(machine: Machine, v: Vector): string[] {
  const out: string[] = [];
  const clock = new FakeClock(v.now);
  const started = machine.start({ context: v.context, clock: clock.now });
  if (!(started instanceof Object) || !("send" in started)) {
    if (!same(started.toJSON(), v.start.line)) out.push(`start: line differs: want ${JSON.stringify(v.start.line)} got ${JSON.stringify(asJson(started.toJSON()))}`);
    return out;
  }
  const line = { ok: true, kind: "start", to: started.state, seq: 0 };
  compare("start", v.start, line, started, [...started.startEffects], out);
  runOps(started, clock, v.ops, 0, out);
  return out;
}

/** Restore the vector's Python snapshot and run the ops after it (Python -> TS interop). */
export function runFromSnapshot(machine: Machine, v: Vector): string[] {
  const out: string[] = [];
  const snap = v.snapshot;
  if (snap === undefined) return out;
  const clock = new FakeClock(timeAfter(v, snap.after));
  const inst = machine.restore(snap.data, { clock: clock.now });
  runOps(inst, clock, v.ops, snap.after, out);
  return out;
}

/** Run to op `k` and take this runtime's snapshot there (TS -> Python interop). */
export function snapshotAfter(machine: Machine, v: Vector, k: number): Record<string, unknown> | null {
  const clock = new FakeClock(v.now);
  const started = machine.start({ context: v.context, clock: clock.now });
  if (!("send" in started)) return null;
  for (const op of v.ops.slice(0, k)) applyOp(started, clock, op);
  return asJson(started.snapshot()) as Record<string, unknown>;
}
