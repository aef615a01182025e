// What the tree of instances (src/children.ts) keeps besides its instances: the messages of the
// root's inbox and the joins of each invoke, with their JSON in a snapshot (the Python
// runtime's `Message.to_json` and `Join.to_json`, the same members).
import { fromPlain, toPlain, type Dict } from "./values.js";

/** The `kind` of an `error.invoke.ID` when a fan-out can no longer reach its join. */
export const JOIN_FAILED = "join";

/** One message of the inbox (Python's `Message`, the same JSON): `to` and `sender` are paths
 * of child ids from the root (`sender` null: from the receiver's parent, or forwarded). */
export interface Message {
  to: readonly string[];
  sender: readonly string[] | null;
  /** `send`, `done` / `error` (a child's end), `joined` / `failed` (an invoke met or failed as
   * it started: `event` is its id) */
  kind: string;
  event: string;
  payload: Dict | null;
  at: number;
  /** `joined` / `failed`, and a child's `done` / `error`: the parent's step that entered the
   * invoke's state (a later entry's join is another one) */
  seq: number;
  /** a fan-out child's `done` / `error`: its position */
  item: number | null;
}

export function messageJSON(m: Message): Dict {
  return { to: [...m.to], sender: m.sender === null ? null : [...m.sender], kind: m.kind, event: m.event, payload: toPlain(m.payload), at: m.at, seq: m.seq, item: m.item };
}

export function messageOf(raw: unknown): Message {
  const r = raw as Dict;
  const sender = r.sender as unknown[] | null;
  if (!Array.isArray(r.to) || (sender !== null && !Array.isArray(sender)) || typeof r.at !== "number") throw new TypeError("a malformed message");
  return {
    to: r.to.map(String), sender: sender === null ? null : sender.map(String), kind: String(r.kind), event: String(r.event),
    payload: fromPlain(r.payload ?? null) as Dict | null, at: r.at, seq: typeof r.seq === "number" ? r.seq : -1,
    item: typeof r.item === "number" ? r.item : null,
  };
}

/** The children one invoke started at one entry of its state, and what came back. */
export class Join {
  results: (Dict | null)[];
  finished: boolean[];
  failed = 0;

  constructor(
    readonly invoke: string,
    readonly seq: number,
    total: number,
    readonly needed: number,
    readonly fan: boolean,
  ) {
    this.results = Array.from({ length: total }, () => null);
    this.finished = Array.from({ length: total }, () => false);
  }

  toJSON(): Dict {
    const { invoke, seq, fan, needed, failed } = this;
    return { invoke, seq, fan, needed, results: toPlain(this.results), finished: [...this.finished], failed };
  }

  static of(raw: unknown): Join {
    const r = raw as Dict;
    if (!Array.isArray(r.results) || !Array.isArray(r.finished) || r.results.length !== r.finished.length) {
      throw new TypeError("a join's results and finished flags differ in length");
    }
    const join = new Join(String(r.invoke), Number(r.seq), 0, Number(r.needed), r.fan === true);
    join.results = fromPlain(r.results) as (Dict | null)[];
    join.finished = r.finished.map((x) => x === true);
    join.failed = Number(r.failed);
    return join;
  }

  /** The `error.invoke.ID` payload of a fan-out that can no longer meet its join, or null. */
  failure(): Dict | null {
    const total = this.finished.length;
    if (total - this.failed >= this.needed) return null;
    const message = `invoke ${this.invoke}: ${this.failed} of its ${total} children failed; ${this.needed} had to finish`;
    return { kind: JOIN_FAILED, message };
  }
}
