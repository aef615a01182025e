// Child flows (IR version 5; the Python runtime's runtime/children.py): the tree of instances a
// flow's `invoke`s make. A state that invokes a flow starts a child when a step enters it (and
// it is still active when the step ends), one per item for a fan-out, and cancels them when a
// step leaves it. Parent and children talk through messages (a child's done data or failure,
// `send E to parent|ID`) held in one FIFO inbox at the root and delivered after the step that
// sent them, each as a step of its receiver (kind `message`; a refused one is dropped).
import type { Ctx, Macrostep } from "./engine.js";
import { ExprFault, LimitExceeded } from "./expr.js";
import { copyJson, type StepResult } from "./history.js";
import type { InvokeDef } from "./ir.js";
import { Instance } from "./instance.js";
import type { Machine } from "./machine.js";
import type { Outcome } from "./outcome.js";
import type { Scheduling } from "./scheduled.js";
import { childEntry, deliverTo, detach, forwarded } from "./treeSteps.js";
import type { StateNode } from "./tree.js";
import { typeName, type Dict } from "./values.js";
import { Join, JOIN_FAILED, type Message } from "./joins.js";

export { Join, JOIN_FAILED, messageJSON, messageOf, type Message } from "./joins.js";
export { deliverTo, forwarded } from "./treeSteps.js";

/** Messages one host call delivers at most; the rest wait for the next call. */
export const MAX_DELIVERIES = 1000;

/** Where a child goes: its parent's node, its path from the root, its invoke, its position. */
export interface Place {
  up: Node;
  path: readonly string[];
  invoke: string;
  index: number | null;
}

/** The place of one instance in a tree: its parent, its path from the root, the invoke that
 * started it, its live children and joins; the root's inbox is shared by every node. */
export class Node {
  /** child id -> child instance, in start order */
  readonly kids = new Map<string, Instance>();
  /** invoke id -> its join (the children of the invoke's current entry) */
  readonly joins = new Map<string, Join>();
  inbox: Message[];
  /** the root only: a host call is running (the instance's methods do not wrap again) */
  busy = false;
  /** the root only, during a host call (or its start): its steps committed in the call, in
   * order (its children's as their `child` entries) */
  log: StepResult[] | null = null;

  constructor(
    readonly inst: Instance,
    public up: Node | null,
    public path: readonly string[],
    readonly invoke: string | null,
    readonly index: number | null,
  ) {
    this.inbox = up === null ? [] : up.inbox;
  }

  get root(): Node {
    return this.up === null ? this : this.up.root;
  }

  /** This node and every descendant, parents first, in start order. */
  *walk(): Generator<Node> {
    yield this;
    for (const kid of this.kids.values()) if (kid.tree !== null) yield* kid.tree.walk();
  }

  /** The instance at `path` below this node (null: gone). */
  find(path: readonly string[]): Instance | null {
    let inst: Instance | undefined = this.inst;
    for (const cid of path) {
      inst = inst.tree?.kids.get(cid);
      if (inst === undefined) return null;
    }
    return inst;
  }

  // ---- what a step does to the tree ------------------------------------------------------
  /** After a committed step (or the start): the children of the states it left cancelled,
   * those of the states it entered (still active) started, its messages queued, and, when
   * the instance ended, its children cancelled and its parent told. */
  committed(run: Macrostep, config: readonly StateNode[], sent: readonly Scheduling[], now: number, step: StepResult | null): void {
    // (a child's step is written into the root's history at once, as an entry of kind
    // `child`: the tree has one history, in causal order; the root's go into its call's log)
    const seq = this.inst.seq; // (the step's: the children started below add entries to a root)
    const root = this.root;
    if (this.up !== null) {
      const entry = childEntry(root.inst, this.path.join("/"), step ?? this.inst);
      root.log?.push(entry);
    } else if (step !== null) root.log?.push(step);
    for (const s of run.exited) for (const inv of s.def.invokes) this.cancel(inv.id);
    if (run.final) {
      for (const invoke of [...this.joins.keys()]) this.cancel(invoke);
    } else {
      for (const s of config) {
        if (s.def.invokes.length > 0 && run.entered.has(s)) for (const inv of s.def.invokes) this.spawn(s, inv, seq, now);
      }
    }
    for (const op of sent) this.post(op, now);
    if (run.final && this.up !== null) this.reportEnd(now);
  }

  /** A message the instance's actions sent: to the parent, or to an invoke's live children. */
  private post(op: Scheduling, now: number): void {
    const event = op.event ?? "";
    if (op.to === "parent") {
      if (this.up !== null) this.inbox.push(message(this.up.path, this.path, "send", event, op.payload, now));
      return;
    }
    for (const [cid, kid] of this.kids) {
      if (kid.tree?.invoke === op.to && !kid.isFinal) this.inbox.push(message([...this.path, cid], null, "send", event, op.payload, now));
    }
  }

  /** An external event the instance took (a host's, a scheduled one, a message), sent on to
   * the children of its `forward` invokes (as SCXML's autoforward: the child that sent it too). */
  forward(event: string, payload: unknown, now: number): void {
    const forwarding = new Set(this.inst.configRef().flatMap((s) => s.def.invokes.filter((i) => i.forward).map((i) => i.id)));
    if (forwarding.size === 0) return;
    for (const [cid, kid] of this.kids) {
      if (kid.tree !== null && forwarding.has(kid.tree.invoke ?? "") && !kid.isFinal) {
        this.inbox.push(message([...this.path, cid], null, "send", event, payload as Dict | null, now));
      }
    }
  }

  /** Forget the invoke's children (and theirs): their messages no longer find their sender. */
  cancel(invoke: string): void {
    if (!this.joins.delete(invoke)) return;
    for (const cid of this.kidsOf(invoke)) detach(this.kids, cid);
  }

  /** This child has ended: its done data to its parent. */
  private reportEnd(now: number): void {
    const up = this.up;
    if (up === null || this.invoke === null) return;
    const inst = this.inst;
    const st = inst.stateNode;
    let data: Dict | null = null;
    if (st.def.done_data !== null) {
      try {
        data = inst.machine.semantics.copy(inst.machine.exec.value(st.def.done_data, inst.ctxRef(), null, st, inst.scope(null)) as Ctx);
      } catch (exc) {
        const why = `the done data of ${st.name}: ${faultText(exc)}`;
        this.inbox.push(this.end(up, this.invoke, "error", { kind: "expression_error", message: why }, now));
        return;
      }
    }
    this.inbox.push(this.end(up, this.invoke, "done", data, now));
  }

  /** This child's `done` or `error` message to its parent, with the entry of the invoke's
   * state it belongs to (its id is `ID.SEQ[.K]`) and its position. */
  private end(up: Node, invoke: string, kind: string, payload: Dict | null, now: number): Message {
    const entry = Number((this.path[this.path.length - 1] ?? "").slice(invoke.length + 1).split(".")[0]);
    return { ...message(up.path, this.path, kind, invoke, payload, now), seq: entry, item: this.index };
  }

  // ---- starting children -----------------------------------------------------------------
  /** Start the children of `inv` for the step `seq` that entered `state`. */
  private spawn(state: StateNode, inv: InvokeDef, seq: number, now: number): void {
    const fan = inv.each !== null;
    // (a single child's id is known before its input, which may read it)
    if (inv.id_target.length > 0 && !fan) this.setPath(inv.id_target, globalId(this.inst, `${inv.id}.${String(seq)}`));
    let inputs: [string, number | null, Dict][];
    try {
      inputs = this.inputs(state, inv, `${inv.id}.${String(seq)}`);
    } catch (exc) {
      const join = new Join(inv.id, seq, 0, 0, fan);
      this.joins.set(inv.id, join);
      this.queue(join, "failed", { kind: "expression_error", message: `the input of invoke ${inv.id}: ${faultText(exc)}` }, now);
      return;
    }
    const total = inputs.length;
    const needed = inv.join ?? total;
    const join = new Join(inv.id, seq, total, needed, fan);
    this.joins.set(inv.id, join);
    const first = inputs[0];
    if (inv.id_target.length > 0 && fan && first !== undefined) this.setPath(inv.id_target, globalId(this.inst, first[0])); // (the first's)
    if (needed > total) {
      this.queue(join, "failed", { kind: JOIN_FAILED, message: `invoke ${inv.id} needs ${needed} of its children, and has ${total}` }, now);
      return;
    }
    if (needed === 0) {
      this.queue(join, "joined", { results: [] }, now);
      return;
    }
    const machine = this.inst.machine.childMachine(inv.flow);
    for (const child of inputs) this.startChild(machine, inv, join, child, now);
  }

  /** (child id, position, context) of each child to start; throws a fault. */
  private inputs(state: StateNode, inv: InvokeDef, base: string): [string, number | null, Dict][] {
    const inst = this.inst;
    const m = inst.machine;
    const c = inst.ctxRef();
    const scope = inst.scope(null);
    const given = (ctx: Ctx): Dict => (inv.input === null ? {} : (m.exec.value(inv.input, ctx, null, state, scope) as Dict));
    if (inv.each === null) return [[base, null, given(c)]];
    const items = m.exec.value(inv.each, c, null, state, scope);
    if (!Array.isArray(items)) throw new ExprFault(`a fan-out needs a list, got ${typeName(items)}`);
    if (items.length > m.semantics.limits.maxItems) throw new ExprFault(`a fan-out over ${items.length.toLocaleString("en-US")} items`);
    return items.map((item: unknown, k) => {
      const scoped: Ctx = { ...c, [`%${inv.item ?? "None"}`]: item, [`%${inv.index ?? "None"}`]: k };
      return [`${base}.${String(k)}`, k, given(scoped)];
    });
  }

  /** Start one child; one whose start is refused fails (in a fan-out, counted). */
  private startChild(machine: Machine, inv: InvokeDef, join: Join, child: [string, number | null, Dict], now: number): void {
    const [cid, index, given] = child;
    const place: Place = { up: this, path: [...this.path, cid], invoke: inv.id, index };
    const started = Instance.start(machine, { context: given, clock: this.inst.clock, id: globalId(this.inst, cid) }, place);
    if (started instanceof Instance) {
      this.kids.set(cid, started);
      return;
    }
    if (!join.fan) {
      this.queue(join, "failed", { kind: started.code, message: started.message }, now);
      return;
    }
    join.failed += 1;
    if (join.finished.length - join.failed === join.needed - 1) this.queue(join, "failed", join.failure() ?? {}, now);
  }

  // ---- delivering ------------------------------------------------------------------------
  /** Deliver the inbox in order (at most `MAX_DELIVERIES`). */
  drain(): void {
    for (let n = 0; n < MAX_DELIVERIES; n++) {
      const msg = this.inbox.shift();
      if (msg === undefined) return;
      this.deliver(msg);
    }
  }

  /** One message to its receiver (dropped when it, or the child that sent it, is gone). */
  private deliver(msg: Message): Outcome | null {
    const target = this.find(msg.to);
    const node = target?.tree ?? null;
    if (target === null || node === null || target.isFinal) return null;
    if (msg.kind === "joined" || msg.kind === "failed") {
      const join = node.joins.get(msg.event);
      if (join?.seq !== msg.seq) return null; // the invoke's state was left meanwhile
      if (msg.kind === "failed") return node.deliverError(msg.event, msg.payload ?? {}, msg.at);
      return deliverTo(target, `done.invoke.${msg.event}`, msg.payload, msg.at);
    }
    if (msg.sender !== null) {
      // (a message a child sent before its state was left is still delivered, as SCXML keeps
      // what was queued; a child cancelled since is detached and sends nothing here)
      const kid = node.kids.get(msg.sender[msg.sender.length - 1] ?? "") ?? null;
      if (msg.kind !== "send") return node.childEnded(kid, msg);
      if (kid !== null) node.finalize(kid, msg);
    }
    const out = deliverTo(target, msg.event, msg.payload, msg.at);
    forwarded(target, out);
    return out;
  }

  /** A child's `done` or `error`, counted toward its invoke's join. The end of a single child
   * whose state was left since it ended is still told (a fan-out's join is gone: dropped). */
  private childEnded(kid: Instance | null, msg: Message): Outcome | null {
    const join = this.joins.get(msg.event);
    const node = kid?.tree ?? null;
    if (kid === null || node === null || join?.seq !== msg.seq) {
      if (msg.item !== null) return null;
      return deliverTo(this.inst, `${msg.kind === "done" ? "done" : "error"}.invoke.${msg.event}`, msg.payload, msg.at);
    }
    this.finalize(kid, msg);
    if (msg.kind === "error") {
      if (!join.fan) return this.deliverError(join.invoke, msg.payload ?? {}, msg.at);
      join.failed += 1;
      const failed = join.failure();
      return failed === null ? null : this.deliverError(join.invoke, failed, msg.at);
    }
    const k = node.index ?? 0;
    join.finished[k] = true;
    join.results[k] = msg.payload;
    return join.finished.filter(Boolean).length === join.needed ? this.done(join, msg.at) : null;
  }

  /** The join is met: the children still running are cancelled, the parent told. */
  private done(join: Join, now: number): Outcome {
    for (const cid of this.kidsOf(join.invoke)) if (this.kids.get(cid)?.isFinal !== true) detach(this.kids, cid);
    const payload = join.fan ? { results: join.results.filter((_, k) => join.finished[k]) } : (join.results[0] ?? null);
    return deliverTo(this.inst, `done.invoke.${join.invoke}`, payload, now);
  }

  private queue(join: Join, kind: string, payload: Dict, now: number): void {
    this.inbox.push({ ...message(this.path, null, kind, join.invoke, payload, now), seq: join.seq });
  }

  /** `error.invoke.ID`: the invoke's children are cancelled first. */
  private deliverError(invoke: string, payload: Dict, now: number): Outcome {
    this.cancel(invoke);
    return deliverTo(this.inst, `error.invoke.${invoke}`, payload, now);
  }

  private kidsOf(invoke: string): string[] {
    return [...this.kids].filter(([, kid]) => kid.tree?.invoke === invoke).map(([cid]) => cid);
  }

  /** The `finalize` actions of the invoke that started `kid`, before its message is taken (a
   * fault leaves the context as it was). */
  private finalize(kid: Instance, msg: Message): void {
    const inst = this.inst;
    const invoke = kid.tree?.invoke;
    for (const s of inst.configRef()) {
      const inv = s.def.invokes.find((i) => i.id === invoke);
      if (inv === undefined) continue;
      if (inv.finalize.length > 0) {
        const c = inst.machine.semantics.copy(inst.ctxRef());
        try {
          inst.machine.exec.run(inv.finalize, c, msg.payload, s, inst.scope(null), null);
        } catch (exc) {
          if (exc instanceof ExprFault || exc instanceof LimitExceeded) return;
          throw exc;
        }
        inst.setContext(c);
      }
      return;
    }
  }

  /** `into FIELD`: the child's id written into the context (a copy). */
  private setPath(path: readonly string[], value: string): void {
    const c = this.inst.machine.semantics.copy(this.inst.ctxRef());
    let inner: Dict = c;
    for (const k of path.slice(0, -1)) inner = inner[k] as Dict;
    inner[path[path.length - 1] ?? ""] = value;
    this.inst.setContext(c);
  }
}

function message(to: readonly string[], sender: readonly string[] | null, kind: string, event: string, payload: Dict | null, at: number): Message {
  return { to, sender, kind, event, payload: copyJson(payload), at, seq: -1, item: null };
}

export function globalId(inst: Instance, cid: string): string {
  return inst.id !== null && inst.id !== "" ? `${inst.id}/${cid}` : cid;
}

function faultText(exc: unknown): string {
  if (exc instanceof ExprFault || exc instanceof LimitExceeded) return exc.message;
  throw exc;
}
