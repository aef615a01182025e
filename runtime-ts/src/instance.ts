// `Instance`: one running flow (configuration, context, history, pending timers, idempotency
// keys). Every operation is one atomic step (step.ts): it commits whole, or answers a
// `Rejection` and leaves the instance exactly as it was.
import { readMs, type Clock } from "./clock.js";
import { Macrostep, newOutputs, rivals, truthy, type Ctx, type StepScope } from "./engine.js";
import { copyJson, entryJSON, StepResult, type Effect, type Entry } from "./history.js";
import type { Machine } from "./machine.js";
import type { Outcome, Rejection } from "./outcome.js";
import { writeSnapshot } from "./snapshot.js";
import { keepUntried, pendingSends, stepRefused, stuck, take, type Trigger } from "./step.js";
import { arm, DelayFault, dueOrder, type Timer } from "./timers.js";
import { SendRefused, splitMessages, type Scheduled } from "./scheduled.js";
import { byOrder, summaryOf, type StateNode } from "./tree.js";
import { guarded } from "./invariants.js";
import { acceptedEvents, allowedTargets } from "./offers.js";
import { backStep, gotoStep } from "./moves.js";
import { sendEvent } from "./send.js";
import { UNKNOWN_CHILD } from "./rejections.js";
import type { Node, Place } from "./children.js";
import { advanceTree, attach, childAt, earliest, hostStep, UnknownChild } from "./childTree.js";

export { UnknownChild };

export interface StartOptions {
  context?: Record<string, unknown> | null;
  clock?: Clock;
  id?: string | null;
  /** the start's time (epoch ms); default: the clock's */
  now?: number;
}

export interface StepOptions {
  force?: boolean;
  reason?: string | null;
  key?: string | null;
}

type Saved = [StateNode, StateNode[], Map<string, StateNode[]>, Ctx, number, number, Timer[], Map<string, number>, readonly Scheduled[]];

/** Idempotency keys remembered per instance (the oldest forgotten first). */
export const KEYS_KEPT = 1024;

export class Instance {
  id: string | null = null;
  /** the rules the start took (eventless rules, completion events); null when restored */
  startRules: readonly number[] | null = null;
  startEffects: readonly Effect[] = [];
  private cur!: StateNode;
  private config: StateNode[] = [];
  private hist = new Map<string, StateNode[]>();
  private ctx: Ctx = {};
  private seqNo = 0;
  private entries: Entry[] = [];
  private pending: Timer[] = [];
  /** pending scheduled events (`send E after D`), soonest first */
  private sends: readonly Scheduled[] = [];
  private keys = new Map<string, number>();
  private subs: ((step: StepResult) => void)[] = [];
  /** states of older versions the history names */
  retired: readonly string[] = [];
  /** its node in a tree of instances (src/children.ts): the flow invokes children or sends
   * messages, or the instance is a child; null otherwise */
  tree: Node | null = null;

  constructor(
    readonly machine: Machine,
    readonly clock: Clock,
  ) {}

  // ---- creation -------------------------------------------------------------------------
  /** `place`: where a child goes in its tree (src/children.ts). */
  static start(m: Machine, opts: StartOptions, place: Place | null = null): Instance | Rejection {
    const sem = m.semantics;
    const started = sem.startContext(opts.context ?? {});
    if (!started.ok) return started.rejection;
    const ctx = started.value;
    const run = new Macrostep([], new Map(), ctx, m.exec, newOutputs());
    const trig: Trigger = { kind: "start", event: null, p: null, reason: null, key: null, at: null, tried: [] };
    const self = new Instance(m, opts.clock ?? m.clock);
    // (a refusal of the start reads the context as the start's actions left it, as in Python)
    self.load(m.initial, [], new Map(), ctx, 0, []);
    try {
      run.enterInitial(m.initial);
      run.settle();
    } catch (exc) {
      return stepRefused(self, run, exc, m.initial, trig, `the entry actions of ${m.initial.name}`);
    }
    const blocked = stuck(self, run, m.initial, trig);
    if (blocked !== null) return blocked;
    const now = opts.now ?? readMs(self.clock);
    const config = [...run.config].sort(byOrder);
    const state = summaryOf(config);
    let timers: Timer[];
    try {
      timers = arm(config.flatMap((s) => s.timers), now, m.exec, ctx, run);
    } catch (exc) {
      if (!(exc instanceof DelayFault)) throw exc;
      return sem.fault(exc.fault, exc.where, m.initial, null, null, ctx);
    }
    let sends: Scheduled[] = [];
    const [scheduled, messages] = splitMessages(run.outputs.scheduled);
    try {
      sends = scheduled.length > 0 ? pendingSends(self, run, scheduled, now, 0) : [];
    } catch (exc) {
      if (!(exc instanceof SendRefused)) throw exc;
      return sem.fault(exc.fault, exc.where, m.initial, null, null, ctx);
    }
    const leaves = state.atomic ? null : ([[], config.filter((s) => s.atomic).map((s) => s.name)] as const);
    self.id = opts.id ?? null;
    self.load(state, config, run.histories, ctx, 0, [
      { seq: 0, at: now, kind: "start", source: null, target: state.name, event: null, payload: null, reason: null, via: [...run.via], leaves },
    ]);
    self.pending = dueOrder(timers);
    self.sends = sends;
    self.startRules = [...run.fired];
    self.startEffects = run.outputs.effects.map(([effect, payload]) => ({ effect, payload: payload ?? {} }));
    if (m.composes) attach(self, place, run, config, messages, now);
    return self;
  }

  /** Set everything a step or a restore decides (no checks: the caller made them). */
  load(state: StateNode, config: StateNode[], hist: Map<string, StateNode[]>, ctx: Ctx, seq: number, entries: Entry[]): void {
    this.cur = state;
    this.config = config;
    this.hist = hist;
    this.ctx = ctx;
    this.seqNo = seq;
    this.entries = entries;
  }

  // ---- reading ----------------------------------------------------------------------------
  /** the active leaf, or the innermost state holding every active leaf */
  get state(): string {
    return this.cur.name;
  }
  get stateNode(): StateNode {
    return this.cur;
  }
  get configuration(): string[] {
    return this.config.map((s) => s.name);
  }
  get context(): Ctx {
    return copyJson(this.ctx);
  }
  get isFinal(): boolean {
    return this.cur.final;
  }
  get seq(): number {
    return this.seqNo;
  }
  get history(): Record<string, unknown>[] {
    return this.entries.map(entryJSON);
  }
  get timers(): { due: number; target: string | null; after_ms: number | null }[] {
    return this.pending.map(([due, t]) => ({ due, target: t.target?.name ?? null, after_ms: t.afterMs }));
  }
  /** pending scheduled events, soonest first (Python's `Instance.scheduled`, `due` in epoch ms) */
  get scheduled(): { id: string; due: number; event: string; payload: Record<string, unknown> | null }[] {
    return this.sends.map((x) => ({ id: x.id, due: x.due, event: x.event, payload: copyJson(x.payload) }));
  }
  /** The child instances its `invoke`s started that are still current (their state not
   * left), by child id (`ID.SEQ`, a fan-out's `ID.SEQ.K`), in start order. */
  get children(): Record<string, Instance> {
    return Object.fromEntries(this.tree?.kids ?? []);
  }
  /** A descendant by its path, `/` between levels: a child id (`pay.3`), an invoke's id for
   * its current child (`pay`), or `ID[K]` for a fan-out's child at position K. Throws
   * `UnknownChild` when there is none. */
  child(path: string): Instance {
    return childAt(this, path);
  }
  /** `op` on the descendant at `path`, or the rejection `unknown_child` when there is none. */
  onChild(path: string, op: (child: Instance) => Outcome, event: string | null = null): Outcome {
    try {
      return op(this.child(path));
    } catch (exc) {
      if (!(exc instanceof UnknownChild)) throw exc;
      return this.machine.semantics.rejection(UNKNOWN_CHILD, this.cur, event, null, this.ctx, { child: path });
    }
  }
  /** When the next timer or scheduled event is due (epoch ms), or null; in a tree of
   * instances, the earliest of the tree's. */
  get nextDeadline(): number | null {
    if (this.tree !== null) return earliest(this.tree.root)?.[0] ?? null;
    const dues = [this.pending[0]?.[0], this.sends[0]?.due].filter((d): d is number => d !== undefined);
    return dues.length > 0 ? Math.min(...dues) : null;
  }
  active(name: string): boolean {
    return this.config.some((s) => s.name === name);
  }

  // (for step.ts, send.ts and snapshot.ts: the live values, not copies)
  ctxRef(): Ctx {
    return this.ctx;
  }
  configRef(): readonly StateNode[] {
    return this.config;
  }
  historiesRef(): ReadonlyMap<string, StateNode[]> {
    return this.hist;
  }
  timersRef(): Timer[] {
    return this.pending;
  }
  entriesRef(): readonly Entry[] {
    return this.entries;
  }
  keysRef(): ReadonlyMap<string, number> {
    return this.keys;
  }
  sendsRef(): readonly Scheduled[] {
    return this.sends;
  }
  setSends(sends: readonly Scheduled[]): void {
    this.sends = sends;
  }
  setTimers(timers: Timer[]): void {
    this.pending = timers;
  }
  /** Append an entry the root of a tree records for a child's step (src/children.ts). */
  record(entry: Entry): void {
    this.entries.push(entry);
    this.seqNo = entry.seq;
  }
  setContext(c: Ctx): void {
    this.ctx = c;
  }
  setKeys(keys: Map<string, number>): void {
    this.keys = keys;
  }
  nowMs(): number {
    return readMs(this.clock);
  }
  leafNames(): string[] {
    return this.config.filter((s) => s.atomic).map((s) => s.name);
  }
  leaves(): StateNode[] {
    return this.config.filter((s) => s.atomic);
  }
  /** what guards evaluated before a step read: the configuration and the event */
  scope(event: string | null): StepScope {
    return { config: new Set(this.config), event, outputs: newOutputs() };
  }

  /** Call `callback(step)` after every committed step (not after refusals or replays);
   * returns the function that unsubscribes. A callback that throws is skipped: the step
   * stays committed. */
  subscribe(callback: (step: StepResult) => void): () => void {
    this.subs.push(callback);
    return () => {
      this.subs = this.subs.filter((cb) => cb !== callback);
    };
  }

  notify(step: StepResult): void {
    for (const cb of [...this.subs]) {
      try {
        cb(step);
      } catch {
        // a subscriber's failure is its own: the step stands
      }
    }
  }

  /** Everything a step may change, to be put back (`checkInvariants`). */
  save(): Saved {
    return [this.cur, this.config, this.hist, this.ctx, this.seqNo, this.entries.length, this.pending, new Map(this.keys), this.sends];
  }

  undo(saved: Saved): void {
    [this.cur, this.config, this.hist, this.ctx, this.seqNo] = saved;
    this.entries.length = saved[5];
    this.pending = saved[6];
    this.keys = saved[7];
    this.sends = saved[8];
  }

  /** Commit a step (step.ts): nothing here can fail. */
  commit(entry: Entry, c: Ctx, config: StateNode[], hist: Map<string, StateNode[]>, pending: [Timer[], readonly Scheduled[]], key: string | null): void {
    this.entries.push(entry);
    this.seqNo = entry.seq;
    this.ctx = c;
    this.config = config;
    this.hist = hist;
    this.cur = summaryOf(config);
    [this.pending, this.sends] = pending;
    if (key !== null) {
      this.keys.set(key, entry.seq);
      if (this.keys.size > KEYS_KEPT) {
        const oldest = this.keys.keys().next().value;
        if (oldest !== undefined) this.keys.delete(oldest);
      }
    }
  }

  // ---- steps ------------------------------------------------------------------------------
  send(event: string, payload: Record<string, unknown> | null = null, opts: StepOptions = {}): Outcome {
    // (a JavaScript caller may pass anything: a name that is not a string is said as one)
    const name = typeof event === "string" ? event : String(event);
    return guarded(this, name, () => hostStep(this, () => this.early(opts, name) ?? sendEvent(this, name, payload, opts), name));
  }

  goto(target: string, opts: StepOptions = {}): Outcome {
    const name = typeof target === "string" ? target : String(target);
    return guarded(this, null, () => hostStep(this, () => this.early(opts, null) ?? gotoStep(this, name, opts), null));
  }

  back(opts: StepOptions = {}): Outcome {
    return guarded(this, null, () => hostStep(this, () => this.early(opts, null) ?? backStep(this, opts), null));
  }

  /** Fire every timer and deliver every scheduled event due at `nowMs` (default: the clock's
   * time), soonest first. */
  advance(nowMs?: number): Outcome[] {
    const root = this.tree?.root ?? null;
    if (root !== null && !root.busy) {
      // the whole tree's timers, from its root (src/children.ts)
      const when = nowMs ?? this.nowMs();
      return guarded(root.inst, null, () => hostStep(root.inst, () => advanceTree(root, when), null));
    }
    return guarded(this, null, () => this.fireDue(nowMs));
  }

  /** This instance's own timers and scheduled events due at `nowMs`, soonest first. */
  fireDue(nowMs?: number): Outcome[] {
    const when = nowMs ?? this.nowMs();
    const out: Outcome[] = [];
    for (;;) {
      const first = this.pending[0];
      const sent = this.sends[0];
      if (sent !== undefined && (first === undefined || sent.due < first[0])) {
        // a scheduled event before any timer (a timer due at the same millisecond goes first)
        if (sent.due > when) break;
        this.sends = this.sends.slice(1);
        out.push(this.deliver(sent));
        continue;
      }
      if (first === undefined || first[0] > when) break;
      const due = first[0];
      const st = this.cur;
      const c = this.ctx;
      const n = this.pending.filter(([d]) => d === due).length;
      const tried = this.pending.slice(0, n).map(([, t]) => t);
      this.pending = this.pending.slice(n);
      for (const [i, t] of tried.entries()) {
        try {
          if (t.guard !== null && !truthy(this.machine.exec.value(t.guard, c, null, t.source, this.scope(null)))) continue;
        } catch (exc) {
          out.push(this.machine.semantics.fault(exc, `the guard of ${t.describe()}`, st, null, null, c));
          continue;
        }
        const last = this.entries[this.entries.length - 1];
        const at = Math.max(due, last?.at ?? due);
        const group = tried.filter((x) => rivals(x, t));
        const trig: Trigger = { kind: "timer", event: null, p: null, reason: null, key: null, at, tried: group };
        out.push(take(this, [t], trig));
        keepUntried(this, t, tried.slice(i + 1), due);
        break;
      }
    }
    return out;
  }

  /** A scheduled event, due: sent as a host sends one (refused, it is dropped), but by the
   * flow itself (an `internal` event is allowed), recorded at its deadline. */
  private deliver(sent: Scheduled): Outcome {
    const last = this.entries[this.entries.length - 1];
    const at = Math.max(sent.due, last?.at ?? sent.due);
    return sendEvent(this, sent.event, sent.payload, {}, at);
  }

  /** The events that may be accepted now (see offers.ts). */
  acceptedEvents(): { name: string }[] {
    return acceptedEvents(this);
  }

  /** The states `goto` can reach now; backward edges only with `force`. */
  allowedTargets(opts: { force?: boolean } = {}): string[] {
    return allowedTargets(this, opts.force === true);
  }

  /** The flow's `template NAME` rendered with `context`, `state` and `extra` as variables. */
  render(name: string, extra: Record<string, unknown> = {}): string {
    const source = this.machine.flow.templates[name];
    if (source === undefined) throw new Error(`unknown template '${name}'`);
    return this.machine.semantics.render(source, { context: this.ctx, state: this.cur.view(), ...extra });
  }

  snapshot(): Record<string, unknown> {
    return writeSnapshot(this);
  }

  // ---- helpers ----------------------------------------------------------------------------
  trigger(kind: string, event: string | null, p: unknown, opts: StepOptions, at: number | null = null): Trigger {
    return { kind, event, p, reason: opts.reason ?? null, key: opts.key ?? null, at, tried: [] };
  }


  /** `invalid_argument` for a bad key or reason, or the earlier step of a key applied. */
  early(opts: StepOptions, event: string | null): Outcome | null {
    const bad = this.machine.semantics.badArgument(this.cur, this.ctx, opts, event);
    if (bad !== null) return bad;
    const key = opts.key;
    if (key === undefined || key === null) return null;
    const seq = this.keys.get(key);
    if (seq === undefined) return null;
    const entry = [...this.entries].reverse().find((e) => e.seq === seq);
    return entry === undefined ? null : new StepResult(entry, this.ctx, null, null, [], true, this.machine.journaller);
  }
}
