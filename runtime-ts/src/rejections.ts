/**
 * Refusals (runtime/rejections.py, `Machine.rejection` / `_message_text` in
 * runtime/machine.py): the codes, the variables a message sees, and the message text: the
 * flow's template (or the kind's default) rendered from its lowered form and stripped; when it
 * cannot be rendered, the kind's default message; when that fails too, the kind itself.
 * The `Rejection` object whose `toJSON()` equals Python's `to_dict()` is src/outcome.ts's.
 */
import { strip } from "./builtins.js";
import { DEFAULT_MESSAGES } from "./default_messages.js";
import type { Limits } from "./limits.js";
import { RenderError, renderParts, TemplateEvent, type Part } from "./template.js";
import { hasKey, type Dict } from "./values.js";

export { DEFAULT_MESSAGES } from "./default_messages.js";

/** `Rejection.kind` of a refusal written in the flow: `on E ... reject CODE "..."`. */
export const REJECT = "reject";
/** `Rejection.kind` of a failed event precondition: `event E(...) require C else CODE "..."`. */
export const REQUIRE = "require";
export const INVALID_PAYLOAD = "invalid_payload";
export const INVALID_CONTEXT = "invalid_context";
export const UNKNOWN_EVENT = "unknown_event";
/** An event declared `internal`, sent by a host: only the flow itself may send it. */
export const INTERNAL_EVENT = "internal_event";
export const EVENT_NOT_ACCEPTED = "event_not_accepted";
/** Not a refusal: a state that says `unhandled ignore` had no rule for the event. */
export const IGNORED = "ignored";
export const GUARD_FAILED = "guard_failed";
export const UNKNOWN_STATE = "unknown_state";
export const INVALID_TRANSITION = "invalid_transition";
export const BACKWARD_REQUIRES_FORCE = "backward_requires_force";
export const NO_PREVIOUS_STATE = "no_previous_state";
export const INSTANCE_FINAL = "instance_final";
export const ROUTING_LOOP = "routing_loop";
export const EXPRESSION_ERROR = "expression_error";
export const LIMIT_EXCEEDED = "limit_exceeded";
export const INVALID_ARGUMENT = "invalid_argument";
export const INVARIANT_VIOLATED = "invariant_violated";
/** An operation on a child (`Instance.onChild`, a vector's `"child"`) that names none. */
export const UNKNOWN_CHILD = "unknown_child";

/** The fields every rejection's `toJSON()` has; a flow's refusal data cannot use them. */
export const REJECTION_FIELDS: ReadonlySet<string> = new Set(["ok", "error", "message", "kind", "state", "event"]);

/** What a message template sees of the refused step. */
export interface Refused {
  kind: string;
  /** the flow's code of a `reject` / `require`; the kind otherwise */
  code?: string | null;
  state: { name: string; title: string; meta: Readonly<Dict> };
  event: string | null;
  payload: Readonly<Dict> | null;
  context: Readonly<Dict>;
  data: Readonly<Dict> | null;
}

/** The variables of a rejection's message (`Machine._message_text`). */
export function messageVariables(r: Refused): Dict {
  const out: Dict = {
    state: { name: r.state.name, title: r.state.title, meta: r.state.meta },
    event: r.event !== null ? new TemplateEvent(r.event, r.payload === null ? null : { ...r.payload }) : null,
    context: { ...r.context },
    payload: r.payload !== null && Object.keys(r.payload).length > 0 ? { ...r.payload } : {},
    code: r.code ?? r.kind,
  };
  for (const [k, v] of Object.entries(r.data ?? {})) out[k] = v;
  return out;
}

type Lowered = Readonly<Record<string, readonly Part[] | null>>;

function partsOf(source: string, lowered: Lowered | undefined): readonly Part[] | null {
  if (lowered !== undefined && hasKey(lowered, source)) return lowered[source] ?? null;
  for (const d of Object.values(DEFAULT_MESSAGES)) if (d.source === source) return d.parts;
  return null;
}

/** The message of a refusal of `kind` whose template is `source` (the flow's `message KIND`,
 * a rule's or a requirement's text, or the kind's default), `lowered` being the flow's
 * `lowered_templates`. */
export function messageText(kind: string, source: string, variables: Readonly<Dict>, lowered?: Lowered, limits?: Limits): string {
  if (!source.includes("{")) return strip(source);
  const render = (text: string): string => {
    const parts = partsOf(text, lowered);
    if (parts === null) throw new RenderError("the template has no lowered form");
    return strip(renderParts(parts, variables, limits));
  };
  try {
    return render(source);
  } catch (e) {
    if (!(e instanceof RenderError)) throw e;
    const fallback = DEFAULT_MESSAGES[kind]?.source;
    if (fallback !== undefined && fallback !== source) {
      try {
        return render(fallback);
      } catch (again) {
        if (!(again instanceof RenderError)) throw again;
      }
    }
    return kind;
  }
}

/** The template of a refusal of `kind`: the flow's `messages` entry, else the default. */
export function messageSource(kind: string, flowMessages: Readonly<Record<string, string>>): string {
  if (hasKey(flowMessages, kind)) return flowMessages[kind] ?? kind;
  return DEFAULT_MESSAGES[kind]?.source ?? kind;
}
