// The steps of a tree of instances (src/children.ts): a message delivered as a step of its
// receiver, a child's step recorded in its root's history (an entry of kind `child`), a
// cancelled child detached, and the forwarding of a step's external event.
import { StepResult, type Entry } from "./history.js";
import type { Instance } from "./instance.js";
import type { Message } from "./joins.js";
import type { Outcome } from "./outcome.js";
import { sendEvent } from "./send.js";
import type { Dict } from "./values.js";

/** An event to an instance of the tree, as the flow's own (internal events allowed),
 * recorded as a `message` step. */
export function deliverTo(target: Instance, event: string, payload: unknown, at: number): Outcome {
  const last = target.entriesRef()[target.entriesRef().length - 1];
  return sendEvent(target, event, payload, {}, Math.max(at, last?.at ?? at), "message");
}

/** The root's history entry of a child's step (or start): kind `child`, the root's state as
 * source and target, the child's event, `{child: PATH, seq, from, to}` as payload; it carries
 * the child step's effects (a start's: those its start emitted). */
export function childEntry(root: Instance, path: string, step: StepResult | Instance): StepResult {
  const entries = root.entriesRef();
  const last = entries[entries.length - 1];
  let at: number;
  let event: string | null = null;
  let effects: StepResult["fx"];
  let data: Dict;
  if (step instanceof StepResult) {
    ({ at, event } = step.entry);
    effects = step.fx;
    data = { child: path, seq: step.seq, from: step.from, to: step.to };
  } else {
    const started = step.entriesRef();
    at = started[started.length - 1]?.at ?? 0;
    effects = step.startEffects.map((e) => [e.effect, e.payload] as const); // (its start's own)
    data = { child: path, seq: 0, from: null, to: step.state };
  }
  const name = root.stateNode.name;
  const entry: Entry = {
    seq: root.seq + 1, at: Math.max(at, last?.at ?? at), kind: "child", source: name, target: name, event, payload: data,
    reason: null, via: [], leaves: null,
  };
  root.record(entry);
  const config = root.machine.chart ? root.configuration : null;
  return new StepResult(entry, root.ctxRef(), config, null, effects, false, root.machine.journaller);
}

/** A cancelled child leaves the tree: a host still holding it drives a tree of its own (its
 * messages to its parent go nowhere, nothing it does is recorded in its old root). */
export function detach(kids: Map<string, Instance>, cid: string): void {
  const node = kids.get(cid)?.tree ?? null;
  kids.delete(cid);
  if (node === null) return;
  node.up = null;
  const inbox: Message[] = [];
  const depth = node.path.length;
  for (const n of node.walk()) {
    n.path = n.path.slice(depth);
    n.inbox = inbox;
  }
}

/** The step kinds that take an external event (a timer's and a `goto`'s have none). */
const EXTERNAL: ReadonlySet<string> = new Set(["event", "scheduled", "message"]);

/** Forward the external event of a step (`Node.forward`): one the instance took, or one its
 * flow ignores (`unhandled ignore`: taken, with nothing to do). */
export function forwarded(inst: Instance, out: Outcome): void {
  const node = inst.tree;
  if (node === null) return;
  if (out instanceof StepResult) {
    const e = out.entry;
    if (EXTERNAL.has(e.kind) && e.event !== null) node.forward(e.event, e.payload, e.at);
  } else if (out.code === "ignored" && out.event !== null) {
    const entries = inst.entriesRef();
    node.forward(out.event, null, entries[entries.length - 1]?.at ?? 0);
  }
}
