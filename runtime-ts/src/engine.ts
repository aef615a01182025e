// The one engine: what a step does, decided in one place for every trigger (an event, `goto`,
// `back`, a due timer, the start) and every flow (a flat flow is a chart whose configuration
// is one leaf). SCXML's algorithm (W3C Recommendation 2015, Appendix D), as the Python
// runtime's kernel runs it: selection, conflict resolution, the exit set (innermost first,
// history recorded before anything is left), the transitions' actions, the entry set
// (outermost first, defaults and histories), then eventless rules and internal events until
// nothing more is enabled. Everything runs on a working copy; the instance commits or not.
import type { Budget, Output, Scheduling } from "./expr.js";
import type { Actions, Expr } from "./ir.js";
import { LimitExceeded } from "./limits.js";
import { byOrder, summaryOf, type Rule, type StateNode } from "./tree.js";

export type Ctx = Record<string, unknown>;

/** What a step's actions produce besides the context, and the work its loops did. */
export interface Outputs {
  raised: Output[];
  effects: Output[];
  /** `send` and `cancel` (scheduled events), in the order the actions ran them */
  scheduled: Scheduling[];
  budget: Budget;
}

export function newOutputs(): Outputs {
  return { raised: [], effects: [], scheduled: [], budget: { iterations: 0, outputs: 0, size: 0 } };
}

/** What expressions read besides context, payload and state: the live configuration and
 * the event being processed (`active(X)`, `event_name()`), and where outputs go. */
export interface StepScope {
  readonly config: ReadonlySet<StateNode>;
  readonly event: string | null;
  readonly outputs: Outputs;
}

/** How the engine evaluates the IR's expressions and runs its action blocks (machine.ts
 * provides it over src/expr.ts). */
export interface Exec {
  value(node: Expr, c: Ctx, p: unknown, state: StateNode, scope: StepScope): unknown;
  run(block: Actions, c: Ctx, p: unknown, state: StateNode, scope: StepScope, rule: Rule | null): void;
  /** a raised event's payload, normalised; throws an ExprFault when it does not fit */
  raisedPayload(name: string, given: unknown): unknown;
  /** a scheduled event's payload, normalised; throws an ExprFault when it does not fit */
  scheduledPayload(name: string, given: unknown): Record<string, unknown> | null;
  readonly maxMicrosteps: number;
  /** the flow has eventless rules or choice states */
  readonly eventless: boolean;
}

/** Python's truthiness, which guards are judged by. */
export function truthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === "") return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === "object") return Object.keys(v).length > 0;
  return true;
}

/** A step past `max_microsteps` (a limit, refused as `limit_exceeded`). */
export class Microsteps extends LimitExceeded {
  override name = "Microsteps";
}

/** A `reject` rule won for an internal event: the whole step is refused by it. */
export class Refusal extends Error {
  override name = "Refusal";
  constructor(
    readonly rule: Rule,
    readonly payload: unknown,
  ) {
    super(rule.def.code ?? "reject");
  }
}

/** A step entered a choice state twice (Python's `RoutingLoop`). */
export class RoutingLoop extends Error {
  override name = "RoutingLoop";
  constructor(
    readonly path: string[],
    readonly node: string,
  ) {
    super("routing loop");
  }
}

/** One action block being run: where a fault in it is said to be. */
export interface Step {
  phase: "exit" | "actions" | "entry";
  state: StateNode;
}

export class Macrostep implements StepScope {
  readonly config: Set<StateNode>;
  readonly histories: Map<string, StateNode[]>;
  count = 0;
  readonly entered = new Set<StateNode>();
  readonly exited = new Set<StateNode>();
  private readonly defaulted = new Set<StateNode>();
  private readonly historyDefaults = new Map<StateNode, StateNode>();
  /** the IR indices of the rules taken, microstep by microstep */
  readonly fired: number[] = [];
  p: unknown = null;
  event: string | null = null;
  final = false;
  step: Step | null = null;
  taken: Rule | null = null;
  /** the state the instance was in after each microstep but the last */
  readonly via: string[] = [];
  private readonly routed: StateNode[] = [];

  constructor(
    config: Iterable<StateNode>,
    histories: ReadonlyMap<string, StateNode[]>,
    readonly c: Ctx,
    readonly exec: Exec,
    readonly outputs: Outputs,
  ) {
    this.config = new Set(config);
    this.histories = new Map(histories);
  }

  /** the active leaves, in document order */
  atomic(): StateNode[] {
    return [...this.config].filter((s) => s.atomic).sort(byOrder);
  }

  /** SCXML's selection: per active leaf in document order, its first enabled candidate. */
  select(candidatesOf: (leaf: StateNode) => readonly Rule[], p: unknown): Rule[] {
    const enabled: Rule[] = [];
    for (const leaf of this.atomic()) {
      for (const t of candidatesOf(leaf)) {
        this.taken = t;
        if (t.guard === null || truthy(this.exec.value(t.guard, this.c, p, t.source, this))) {
          if (!enabled.includes(t)) enabled.push(t);
          break;
        }
      }
    }
    this.taken = null;
    return enabled;
  }

  /** Run to completion: eventless rules, then internal events, each a microstep. */
  settle(): void {
    while (!this.final) {
      const ts = this.exec.eventless ? this.select((leaf) => leaf.eventless(), this.p) : [];
      if (ts.length > 0) {
        this.microstep(this.resolve(ts), this.p);
        continue;
      }
      const next = this.outputs.raised.shift();
      if (next === undefined) return;
      const [name, given] = next;
      const p = this.exec.raisedPayload(name, given);
      this.p = p;
      this.event = name;
      const chosen = this.select((leaf) => leaf.on.get(name) ?? [], p);
      for (const t of chosen) if (t.target === null) throw new Refusal(t, p);
      if (chosen.length > 0) this.microstep(this.resolve(chosen), p);
    }
  }

  /** SCXML's removeConflictingTransitions. */
  resolve(enabled: Rule[]): Rule[] {
    let kept: Rule[] = [];
    for (const t1 of enabled) {
      let preempted = false;
      const beaten: Rule[] = [];
      const exits1 = this.exitSet([t1]);
      for (const t2 of kept) {
        const exits2 = this.exitSet([t2]);
        if ([...exits1].some((s) => exits2.has(s))) {
          if (t1.source.ancestors.includes(t2.source)) beaten.push(t2);
          else {
            preempted = true;
            break;
          }
        }
      }
      if (!preempted) {
        kept = kept.filter((t) => !beaten.includes(t));
        kept.push(t1);
      }
    }
    return kept;
  }

  exitSet(ts: readonly Rule[]): Set<StateNode> {
    const out = new Set<StateNode>();
    for (const t of ts) {
      if (t.internal) continue;
      const domain = t.domain;
      for (const s of this.config) if (domain === null || s.ancestors.includes(domain)) out.add(s);
    }
    return out;
  }

  /** Take the (conflict-free) transitions `ts` together. */
  microstep(ts: Rule[], p: unknown): void {
    if (this.count > 0) {
      const name = summaryOf(this.config).name;
      if (this.via[this.via.length - 1] !== name) this.via.push(name);
    }
    this.count += 1;
    for (const t of ts) this.fired.push(t.index);
    const limit = this.exec.maxMicrosteps;
    if (this.count > limit) {
      throw new Microsteps(`the step took more than ${limit} microsteps (Limits.max_microsteps)`);
    }
    const exits = [...this.exitSet(ts)].sort(byOrder).reverse();
    for (const s of exits) this.recordHistory(s);
    for (const s of exits) {
      if (s.def.exit.length > 0) this.run({ phase: "exit", state: s }, s.def.exit, p, null);
      this.config.delete(s);
      this.exited.add(s);
    }
    for (const t of ts) {
      this.taken = t;
      if (t.actions.length > 0) this.run({ phase: "actions", state: t.source }, t.actions, p, t);
    }
    this.step = null;
    const entries = new Set<StateNode>();
    for (const t of ts) {
      if (t.internal || t.target === null) continue;
      this.addDescendants(t.target, entries);
      this.addAncestors(t.target, t.domain, entries);
    }
    this.enter(entries, p);
    this.taken = null;
  }

  /** History is recorded before anything is left (SCXML's exitStates). */
  private recordHistory(s: StateNode): void {
    for (const h of s.children) {
      if (h.history === null) continue;
      const rec = [...this.config].filter((x) =>
        h.history === "deep" ? x.atomic && x.ancestors.includes(s) : x.parent === s,
      );
      this.histories.set(h.name, rec.sort(byOrder));
    }
  }

  /** Enter `entries`, outermost first: entry actions, then the initial rule's or history
   * default's actions, and completion when final. */
  private enter(entries: Set<StateNode>, p: unknown): void {
    for (const s of [...entries].sort(byOrder)) {
      if (s.choice) {
        // entering a choice state twice within one step is a loop (`routing_loop`)
        if (this.routed.includes(s)) throw new RoutingLoop([...this.routed.map((x) => x.name), s.name], s.name);
        this.routed.push(s);
      }
      this.config.add(s);
      this.entered.add(s);
      if (s.def.entry.length > 0) this.run({ phase: "entry", state: s }, s.def.entry, p, null);
      if (this.defaulted.has(s) && s.def.initial_actions.length > 0) {
        this.run({ phase: "entry", state: s }, s.def.initial_actions, p, null);
      }
      const used = this.historyDefaults.get(s);
      this.historyDefaults.delete(s);
      if (used !== undefined && used.def.initial_actions.length > 0) {
        this.run({ phase: "entry", state: s }, used.def.initial_actions, p, null);
      }
      if (s.final) this.completed(s);
    }
    this.defaulted.clear();
    this.historyDefaults.clear();
    this.step = null;
  }

  private run(step: Step, block: Actions, p: unknown, rule: Rule | null): void {
    this.step = step;
    this.exec.run(block, this.c, p, step.state, this, rule);
  }

  /** The start: enter `initial` with its default descendants (a microstep). */
  enterInitial(initial: StateNode): void {
    this.count += 1;
    const entries = new Set<StateNode>();
    this.addDescendants(initial, entries);
    this.enter(entries, null);
  }

  private completed(s: StateNode): void {
    const parent = s.parent;
    if (parent === null) {
      this.final = true;
      return;
    }
    const done = s.def.done_data;
    const value = done === null ? null : (this.exec.value(done, this.c, this.p, s, this) as Record<string, unknown> | null);
    this.outputs.raised.push([`done.state.${parent.name}`, value]);
    const grand = parent.parent;
    if (grand?.kind === "parallel" && this.inFinal(grand)) this.outputs.raised.push([`done.state.${grand.name}`, null]);
  }

  private inFinal(s: StateNode): boolean {
    if (s.kind === "compound") return s.children.some((x) => x.final && this.config.has(x));
    if (s.kind === "parallel") return s.regions.every((r) => this.inFinal(r));
    return false;
  }

  /** SCXML's addDescendantStatesToEnter. */
  addDescendants(s: StateNode, into: Set<StateNode>): void {
    if (s.history !== null && s.parent !== null) {
      const parent = s.parent;
      let recorded = this.histories.get(s.name);
      if (recorded === undefined) {
        const fallback = s.default ?? parent.initialChild ?? parent.regions[0];
        recorded = fallback === undefined ? [] : [fallback];
        this.historyDefaults.set(parent, s);
      }
      for (const x of recorded) this.addDescendants(x, into);
      for (const x of recorded) this.addAncestors(x, parent, into);
      return;
    }
    into.add(s);
    if (s.kind === "compound") {
      this.defaulted.add(s);
      if (s.initialTargets.length > 0) {
        for (const x of s.initialTargets) this.addDescendants(x, into);
        for (const x of s.initialTargets) this.addAncestors(x, s, into);
        return;
      }
      if (s.initialChild !== null) this.addDescendants(s.initialChild, into);
    } else if (s.kind === "parallel") {
      this.addRegions(s, into);
    }
  }

  private addRegions(s: StateNode, into: Set<StateNode>): void {
    for (const region of s.regions) {
      if (![...into].some((x) => x === region || x.ancestors.includes(region))) this.addDescendants(region, into);
    }
  }

  /** SCXML's addAncestorStatesToEnter: the ancestors of `s` below `upto`. */
  addAncestors(s: StateNode, upto: StateNode | null, into: Set<StateNode>): void {
    for (const anc of s.ancestors) {
      if (anc === upto) break;
      into.add(anc);
      if (anc.kind === "parallel") this.addRegions(anc, into);
    }
  }

  summary(): StateNode {
    return summaryOf(this.config);
  }
}

/** Whether two timer rules are one group: the same state's timers with the same delay,
 * armed and due together, tried in order like the rules for one event. */
export function rivals(a: Rule, b: Rule): boolean {
  return (
    a.source === b.source &&
    a.afterMs === b.afterMs &&
    (a.afterMs !== null || JSON.stringify(a.def.after_expr) === JSON.stringify(b.def.after_expr))
  );
}

/** The state's default active leaves (a snapshot without a configuration). */
export function defaultLeaves(state: StateNode, exec: Exec): StateNode[] {
  const run = new Macrostep([], new Map(), {}, exec, newOutputs());
  const into = new Set<StateNode>();
  run.addDescendants(state, into);
  return [...into];
}
