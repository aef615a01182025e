// `Machine`: a compiled flow loaded once (IR checked, state tree built, rules wired), shared by
// all its instances. Instances come from `start` and `Machine.restore`.
import type { Clock } from "./clock.js";
import { systemClock } from "./clock.js";
import type { Exec } from "./engine.js";
import { makeExec, type Semantics } from "./exec.js";
import { IRLoadError, loadFlow } from "./ir.js";
import { DEFAULT_LIMITS, type Limits } from "./limits.js";
import type { EventDef, FlowDef, InvokeDef, RuleDef } from "./ir.js";
import { buildTree, wireRules, type StateNode } from "./tree.js";
import type { Journaller } from "./history.js";
import { Instance, type StartOptions } from "./instance.js";
import { settleStart } from "./childTree.js";
import type { Rejection } from "./outcome.js";
import { restoreInstance, type RestoreOptions } from "./snapshot.js";

export interface MachineOptions {
  /** the bounds on values and work of this machine's instances (default: Python's defaults) */
  limits?: Limits;
  /** the clock instances read unless started or restored with their own */
  clock?: Clock;
  /** check the flow's invariants after every step and refuse one that breaks one
   * (`invariant_violated`, nothing changed); off by default, as in Python */
  checkInvariants?: boolean;
}

export class Machine {
  readonly flow: FlowDef;
  readonly name: string;
  readonly version: number;
  readonly hash: string;
  readonly states: ReadonlyMap<string, StateNode>;
  readonly initial: StateNode;
  /** every event, the `done.state.NAME` the runtime declares included */
  readonly events = new Map<string, EventDef>();
  /** the `done.state.NAME` events (a host may not send them) */
  readonly internalEvents: ReadonlySet<string>;
  /** the events declared `internal` (IR version 4): only the flow itself sends them */
  readonly ownEvents: ReadonlySet<string>;
  /** some state is nested, compound, parallel or history */
  readonly hierarchical: boolean;
  /** steps are reported as a statechart's (configuration, leaves): the flow is hierarchical,
   * has `always` rules, raises events or reads `event_name()` (Python's `Machine.chart`) */
  readonly chart: boolean;
  readonly exec: Exec;
  readonly semantics: Semantics;
  clock: Clock = systemClock;
  readonly checkInvariants: boolean;
  /** how steps render the flow's journals (null: it has none) */
  readonly journaller: Journaller | null;
  /** IR version 5: invoke id -> its invoke (ids are unique in a flow) */
  readonly invokes = new Map<string, InvokeDef>();
  /** its instances are nodes of a tree of instances (src/children.ts): the flow invokes
   * children or sends messages, or it is a child flow */
  composes: boolean;
  private readonly limits: Limits;
  private readonly childMachines = new Map<string, Machine>();

  private constructor(flow: FlowDef, opts: MachineOptions) {
    this.flow = flow;
    this.name = flow.name;
    this.version = flow.version;
    this.hash = flow.hash;
    const tree = buildTree(flow);
    this.states = tree.states;
    this.initial = tree.initial;
    this.hierarchical = tree.hierarchical;
    for (const ev of flow.events) this.events.set(ev.name, ev);
    for (const name of tree.doneEvents) {
      if (!this.events.has(name)) this.events.set(name, { name, fields: [], requires: [], internal: false });
    }
    this.internalEvents = new Set(tree.doneEvents);
    this.ownEvents = new Set(flow.events.filter((e) => e.internal).map((e) => e.name));
    let chart = tree.hierarchical;
    for (const t of flow.transitions) if (this.checkRule(t)) chart = true;
    for (const s of flow.states) {
      for (const block of [s.entry, s.exit, s.initial_actions]) {
        if (this.raises(block, `the actions of ${s.name}`)) chart = true;
      }
    }
    if (flow.ir_version >= 2 && calls([flow.states, flow.transitions], "event_name")) chart = true;
    this.chart = chart;
    wireRules(tree, flow.transitions);
    const eventless = [...this.states.values()].some((s) => s.choice || s.always.length > 0);
    this.semantics = makeExec(this, { eventless, limits: opts.limits ?? DEFAULT_LIMITS });
    if (opts.clock !== undefined) this.clock = opts.clock;
    this.checkInvariants = opts.checkInvariants === true;
    const sem = this.semantics;
    this.journaller = flow.journals.length === 0 ? null : {
      names: flow.journals.map((j) => j.name),
      render: (name, entry, ctx) => sem.journal(name, entry, ctx),
    };
    this.exec = this.semantics.exec;
    this.limits = opts.limits ?? DEFAULT_LIMITS;
    for (const s of flow.states) {
      for (const inv of s.invokes) {
        if (!(inv.flow in flow.children)) throw new IRLoadError(`invoke '${inv.id}' starts '${inv.flow}', not a child flow`);
        if (this.invokes.has(inv.id)) throw new IRLoadError(`invoke id '${inv.id}' is used twice`);
        this.invokes.set(inv.id, inv);
      }
    }
    this.composes = this.invokes.size > 0 || sendsMessages(flow);
  }

  /** The machine of the child flow `name`, loaded on first use and kept; its instances are
   * nodes of a tree (src/children.ts). */
  childMachine(name: string): Machine {
    let m = this.childMachines.get(name);
    if (m === undefined) {
      const ir = this.flow.children[name];
      if (ir === undefined) throw new IRLoadError(`'${name}' is not a child flow of ${this.name}`);
      m = new Machine(loadFlow(ir), { limits: this.limits, clock: this.clock });
      m.composes = true;
      this.childMachines.set(name, m);
    }
    return m;
  }

  /** Load compiled JSON (an object or its text); throws `IRLoadError`. */
  static fromJSON(ir: object | string, opts: MachineOptions = {}): Machine {
    return new Machine(loadFlow(ir), opts);
  }

  /** A new instance in the initial state, or the rejection of its start. */
  start(opts: StartOptions = {}): Instance | Rejection {
    const started = Instance.start(this, opts);
    // (a tree's root: what its children said and did as they started, before it returns)
    if (started instanceof Instance) settleStart(started);
    return started;
  }

  /** An instance from a snapshot (`Instance.snapshot()`, of either runtime). */
  restore(snapshot: object | string, opts: RestoreOptions = {}): Instance {
    return restoreInstance(this, snapshot, opts);
  }

  /** Check one rule (`_check_transition`); whether it makes the flow a statechart. */
  private checkRule(t: RuleDef): boolean {
    const source = this.states.get(t.source);
    if (source === undefined) throw new IRLoadError(`transition #${t.index} leaves unknown state '${t.source}'`);
    if (t.target !== null && !this.states.has(t.target)) {
      throw new IRLoadError(`transition #${t.index} goes to unknown state '${t.target}'`);
    }
    if (t.target === null && t.kind !== "reject") throw new IRLoadError(`transition #${t.index} (${t.kind}) has no target`);
    if ((t.kind === "event" || t.kind === "reject") && (t.event === null || !this.events.has(t.event))) {
      throw new IRLoadError(`transition #${t.index} is on unknown event ${JSON.stringify(t.event)}`);
    }
    if (source.history !== null) throw new IRLoadError(`transition #${t.index} leaves history state '${t.source}'`);
    if (t.kind === "timer") checkDelay(t);
    const raises = this.flow.ir_version >= 2 && this.raises(t.actions, `transition #${t.index}`);
    return t.kind === "always" || raises;
  }

  /** Whether a block raises, schedules (`send`) or cancels events (its steps then run as a
   * statechart's); each event must be declared. */
  private raises(block: unknown[], where: string): boolean {
    const [names, cancels] = raised(block);
    for (const name of names) {
      if (!this.events.has(name)) throw new IRLoadError(`${where} raises undeclared event '${name}'`);
    }
    return names.length > 0 || cancels;
  }
}

function checkDelay(t: RuleDef): void {
  if (t.after_expr !== null) {
    if (t.after_ms !== null) throw new IRLoadError(`timer transition #${t.index} has both delays`);
  } else if (t.after_ms === null || t.after_ms <= 0) {
    throw new IRLoadError(`timer transition #${t.index} needs after_ms > 0`);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The events an action block (the arms of an `if` and loop bodies included) raises or
 * schedules (`send`), and whether it `cancel`s one. */
function raised(block: unknown[]): [string[], boolean] {
  const out: string[] = [];
  let cancels = false;
  for (const a of block) {
    if (!isRecord(a)) continue;
    // (a message, `send E to parent|ID`, names an event of its receiver)
    if (a.op === "raise" || (a.op === "send" && (a.to ?? null) === null)) out.push(String(a.event));
    cancels ||= a.op === "cancel";
    if (!Array.isArray(a.branches)) continue;
    for (const b of a.branches) {
      if (!isRecord(b) || !Array.isArray(b.actions)) continue;
      const [names, inner] = raised(b.actions);
      out.push(...names);
      cancels ||= inner;
    }
  }
  return [out, cancels];
}

/** Whether some action of the flow sends a message (`send E to parent|ID`). */
function sendsMessages(flow: FlowDef): boolean {
  const blocks: unknown[] = [...flow.transitions.map((t) => t.actions)];
  for (const s of flow.states) blocks.push(s.entry, s.exit, s.initial_actions, ...s.invokes.map((i) => i.finalize));
  const stack = [...blocks];
  while (stack.length > 0) {
    const n = stack.pop();
    if (Array.isArray(n)) stack.push(...(n as unknown[]));
    else if (isRecord(n)) {
      if (n.op === "send" && (n.to ?? null) !== null) return true;
      if (Array.isArray(n.branches)) for (const b of n.branches) if (isRecord(b)) stack.push(b.actions);
    }
  }
  return false;
}

/** Whether raw IR calls the function `name` somewhere. */
function calls(node: unknown, name: string): boolean {
  const stack: unknown[] = [node];
  while (stack.length > 0) {
    const n = stack.pop();
    if (Array.isArray(n)) stack.push(...(n as unknown[]));
    else if (isRecord(n)) {
      if (n.op === "call" && n.value === name) return true;
      stack.push(...Object.values(n));
    }
  }
  return false;
}
