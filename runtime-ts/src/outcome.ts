// What a step answers: the committed `StepResult`, or a `Rejection` (nothing changed).
import type { StepResult } from "./history.js";
import { storable, textProblem } from "./limits.js";
import { toPlain } from "./values.js";

/** A refused step, as the Python runtime's `Rejection`: `toJSON()` equals its `to_dict()`.
 * The message is rendered when first read. */
export class Rejection {
  readonly ok = false;
  private text: string | null = null;

  constructor(
    readonly kind: string,
    readonly code: string,
    readonly state: string | null,
    readonly event: string | null,
    readonly data: Record<string, unknown>,
    private readonly render: () => string,
    /** for a `reject`, the IR index of the rule that refused */
    readonly rule: number | null = null,
  ) {}

  get message(): string {
    this.text ??= this.render();
    return this.text;
  }

  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = { ok: false, error: this.code, message: this.message };
    for (const [k, v] of Object.entries(toPlain(this.data) as Record<string, unknown>)) out[k] = v;
    out.kind = this.kind;
    out.state = this.state;
    out.event = this.event;
    for (const [k, v] of Object.entries(out)) {
      if (typeof v === "string" && textProblem(v) !== null) out[k] = storable(v);
    }
    return out;
  }
}

export type Outcome = StepResult | Rejection;
