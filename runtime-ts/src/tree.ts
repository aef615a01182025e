// The state tree of a loaded flow: states with their parents, ancestors, regions, document
// order and dispatch tables (an event's candidate rules: the state's own, then its
// ancestors'), and the rules. A flat flow is the tree whose states are all top-level leaves.
import { IRLoadError } from "./ir.js";
import type { Actions, Expr, FlowDef, RuleDef, RuleKind, StateDef, StateKind } from "./ir.js";

export class Rule {
  readonly index: number;
  readonly kind: RuleKind;
  readonly event: string | null;
  readonly guard: Expr | null;
  readonly actions: Actions;
  readonly back: boolean;
  readonly afterMs: number | null;
  /** `-> self` without `reenter`: nothing left or entered, the timers keep running */
  readonly internal: boolean;
  /** where it is tried among rules falling due together: innermost state first, then document order */
  readonly rank: readonly [number, number, number];

  constructor(
    readonly def: RuleDef,
    readonly source: StateNode,
    readonly target: StateNode | null,
  ) {
    this.index = def.index;
    this.kind = def.kind;
    this.event = def.event;
    this.guard = def.guard;
    this.actions = def.actions;
    this.back = def.back;
    this.afterMs = def.after_ms;
    this.internal = target === source && !def.reenter;
    this.rank = [-source.ancestors.length, source.order, this.index];
    this.domain = Rule.domainOf(this);
  }

  /** The transition's domain: the innermost compound proper ancestor of its source that
   * contains its target (null: the top). A compound's rule to its own descendant is internal
   * unless marked `reenter`: its domain is the compound itself. (Rules are made once the
   * tree is linked, so it is worked out here, once.) */
  readonly domain: StateNode | null;

  private static domainOf(rule: Rule): StateNode | null {
    const target = rule.target;
    if (rule.internal || target === null) return null;
    const source = rule.source;
    if (source.kind === "compound" && target.ancestors.includes(source) && !rule.def.reenter) return source;
    for (const anc of source.ancestors) {
      if (anc.kind === "compound" && target.ancestors.includes(anc)) return anc;
    }
    return null;
  }

  describe(): string {
    const what = this.event !== null ? `on ${this.event}` : this.kind;
    const where = this.def.line ? ` (line ${this.def.line})` : "";
    const target = this.target !== null ? this.target.name : "reject";
    return `rule #${this.index} of ${this.source.name}: ${what} -> ${target}${where}`;
  }
}

export class StateNode {
  readonly name: string;
  readonly kind: StateKind;
  readonly final: boolean;
  readonly choice: boolean;
  readonly atomic: boolean;
  readonly title: string;
  order = 0;
  parent: StateNode | null = null;
  /** proper ancestors, innermost first */
  ancestors: StateNode[] = [];
  children: StateNode[] = [];
  /** the children that are states proper (no history) */
  regions: StateNode[] = [];
  initialChild: StateNode | null = null;
  initialTargets: StateNode[] = [];
  history: "shallow" | "deep" | null = null;
  default: StateNode | null = null;
  ignores: boolean;
  /** event -> candidate rules in try order (own, then the ancestors') */
  on = new Map<string, Rule[]>();
  /** target name -> direct edges to it, in try order */
  direct = new Map<string, Rule[]>();
  routes: Rule[] = [];
  timers: Rule[] = [];
  always: Rule[] = [];
  backEdges: Rule[] = [];
  rules: Rule[] = [];

  constructor(readonly def: StateDef) {
    this.name = def.name;
    this.kind = def.kind;
    this.final = def.kind === "final";
    this.choice = def.kind === "choice";
    this.atomic = def.kind === "normal" || def.kind === "final" || def.kind === "choice";
    this.title = def.title ?? def.name;
    this.ignores = def.unhandled === "ignore";
  }

  /** What `state` reads in expressions and templates. */
  view(): { name: string; title: string; meta: Record<string, unknown> } {
    return { name: this.name, title: this.title, meta: this.def.meta };
  }

  /** eventless rules: a choice state's routes first, then `always` rules */
  eventless(): Rule[] {
    return this.choice ? [...this.routes, ...this.always] : this.always;
  }
}

export const byOrder = (a: StateNode, b: StateNode): number => a.order - b.order;

/** The states and all their ancestors, in document order. */
export function withAncestors(states: Iterable<StateNode>): StateNode[] {
  const out = new Set<StateNode>();
  for (const s of states) {
    out.add(s);
    for (const a of s.ancestors) out.add(a);
  }
  return [...out].sort(byOrder);
}

/** What `Instance.state` names: the one active leaf, or the innermost state holding them all. */
export function summaryOf(config: Iterable<StateNode>): StateNode {
  const leaves = [...config].filter((s) => s.atomic).sort(byOrder);
  const first = leaves[0];
  if (first === undefined) throw new Error("an empty configuration");
  if (leaves.length === 1) return first;
  const rest = leaves.slice(1);
  return first.ancestors.find((anc) => rest.every((l) => l.ancestors.includes(anc))) ?? first;
}

export interface Tree {
  states: Map<string, StateNode>;
  initial: StateNode;
  /** some state is nested, compound, parallel or history */
  hierarchical: boolean;
  /** `done.state.NAME` of every compound and parallel state */
  doneEvents: string[];
}

function linkParent(st: StateNode, states: Map<string, StateNode>): boolean {
  const name = st.def.parent;
  if (name === null) return false;
  const parent = states.get(name);
  if (parent === undefined) throw new IRLoadError(`state '${st.name}' has unknown parent '${name}'`);
  if (parent === st) throw new IRLoadError(`state '${st.name}' is its own parent`);
  if (parent.kind !== "compound" && parent.kind !== "parallel") {
    throw new IRLoadError(`state '${st.name}' has parent '${name}', which is not a compound or parallel state`);
  }
  if (parent.order >= st.order) {
    throw new IRLoadError(`state '${st.name}' is listed before its parent '${name}' (states are in document order)`);
  }
  st.parent = parent;
  st.ancestors = [parent, ...parent.ancestors];
  parent.children.push(st);
  if (parent.ignores) st.ignores = true;
  return true;
}

function linkChildren(st: StateNode, states: Map<string, StateNode>): boolean {
  st.regions = st.children.filter((c) => c.kind !== "history");
  const completes = st.kind === "compound" || st.kind === "parallel";
  if (completes && st.regions.length === 0) throw new IRLoadError(`${st.kind} state '${st.name}' has no child states`);
  if (!completes && st.children.length > 0) throw new IRLoadError(`${st.kind} state '${st.name}' has child states`);
  if (st.kind === "compound") linkInitial(st, states);
  if (st.kind === "history") linkHistory(st, states);
  return completes;
}

function linkInitial(st: StateNode, states: Map<string, StateNode>): void {
  const initials = st.regions.filter((c) => c.def.initial);
  const first = initials[0];
  if (initials.length !== 1 || first === undefined) {
    const found = initials.map((c) => c.name).join(", ") || "none";
    throw new IRLoadError(`compound state '${st.name}' needs exactly one initial child (${found})`);
  }
  st.initialChild = first;
  st.initialTargets = st.def.initial_targets.map((name) => {
    const t = states.get(name);
    const inside = t !== undefined && (t === first || t.ancestors.includes(first));
    if (t === undefined || !(inside || (t.kind === "history" && t.parent === st))) {
      throw new IRLoadError(`initial target '${name}' of '${st.name}' is not a state inside its initial child, nor one of its histories`);
    }
    return t;
  });
}

function linkHistory(st: StateNode, states: Map<string, StateNode>): void {
  const parent = st.parent;
  if (parent === null) throw new IRLoadError(`history state '${st.name}' is not inside a compound or parallel state`);
  st.history = st.def.history ?? "shallow";
  const name = st.def.default;
  if (name === null) return;
  const target = states.get(name);
  if (target === undefined || !target.ancestors.includes(parent)) {
    throw new IRLoadError(`the default '${name}' of history state '${st.name}' is not a state inside '${parent.name}'`);
  }
  if (target.kind === "history") throw new IRLoadError(`the default of history state '${st.name}' is a history state`);
  st.default = target;
}

/** The state tree of `flow`, checked (parents first, one initial child per compound, ...). */
export function buildTree(flow: FlowDef): Tree {
  const states = new Map<string, StateNode>();
  flow.states.forEach((def, i) => {
    if (states.has(def.name)) throw new IRLoadError(`state '${def.name}' is declared twice`);
    const st = new StateNode(def);
    st.order = i;
    states.set(def.name, st);
  });
  const initial = states.get(flow.initial);
  if (initial === undefined) throw new IRLoadError(`the initial state '${flow.initial}' is not a state`);
  let hierarchical = false;
  const v2 = flow.ir_version >= 2;
  for (const st of states.values()) {
    if (v2 && linkParent(st, states)) hierarchical = true;
    if (st.kind === "compound" || st.kind === "parallel" || st.kind === "history") hierarchical = true;
  }
  if (initial.parent !== null) throw new IRLoadError(`the initial state '${initial.name}' is not a top-level state`);
  const doneEvents: string[] = [];
  for (const st of states.values()) if (linkChildren(st, states)) doneEvents.push(`done.state.${st.name}`);
  return { states, initial, hierarchical, doneEvents };
}

function push<K>(map: Map<K, Rule[]>, key: K, rule: Rule): void {
  const have = map.get(key);
  if (have === undefined) map.set(key, [rule]);
  else have.push(rule);
}

function wireState(st: StateNode, defs: RuleDef[], states: Map<string, StateNode>): void {
  for (const def of defs) {
    const target = def.target === null ? null : (states.get(def.target) ?? null);
    const t = new Rule(def, st, target);
    st.rules.push(t);
    if (st.final && st.parent === null) continue; // a top-level final state ends the instance
    if (t.kind === "event" || t.kind === "reject") {
      push(st.on, t.event ?? "", t);
      if (t.back && t.target !== null) st.backEdges.push(t);
    } else if (t.kind === "direct" && t.target !== null) {
      push(st.direct, t.target.name, t);
      if (t.back) st.backEdges.push(t);
    } else if (t.kind === "choice" || t.kind === "else") st.routes.push(t);
    else if (t.kind === "always") st.always.push(t);
    else if (t.kind === "timer") st.timers.push(t);
  }
}

function inherit(st: StateNode, parent: StateNode): void {
  for (const [name, ts] of parent.on) st.on.set(name, [...(st.on.get(name) ?? []), ...ts]);
  for (const [name, ts] of parent.direct) st.direct.set(name, [...(st.direct.get(name) ?? []), ...ts]);
  st.backEdges = [...st.backEdges, ...parent.backEdges];
  st.always = [...st.always, ...parent.always];
}

/** Build every state's rules and dispatch tables (parents before children: document order). */
export function wireRules(tree: Tree, rules: RuleDef[]): void {
  const bySource = new Map<string, RuleDef[]>();
  for (const def of rules) {
    const list = bySource.get(def.source);
    if (list === undefined) bySource.set(def.source, [def]);
    else list.push(def);
  }
  for (const st of tree.states.values()) {
    const defs = (bySource.get(st.name) ?? []).sort((a, b) => a.index - b.index);
    wireState(st, defs, tree.states);
    if (st.parent !== null) inherit(st, st.parent);
  }
}
