// Every rejection message the Python runtime gives (tests/ts/make_message_cases.py): the same
// text from src/rejections.ts (templates, defaults, fallbacks, stripping).
import { describe, expect, it } from "vitest";
import { messageSource, messageText, messageVariables } from "../src/rejections.js";
import type { Part } from "../src/template.js";
import type { Dict } from "../src/values.js";
import { loadDocument } from "./cases.js";

interface MessageCase {
  kind: string;
  code?: string;
  template?: string;
  state: string;
  event: string | null;
  payload: Dict | null;
  context: Dict;
  data: Dict;
  message: string;
}
interface Document {
  messages: Record<string, string>;
  lowered_templates: Record<string, Part[] | null>;
  states: Record<string, { title: string | null; meta: Dict | null }>;
  cases: MessageCase[];
}
const DOC = loadDocument("message_cases.json") as Document;

function message(c: MessageCase): string {
  const st = DOC.states[c.state];
  const state = { name: c.state, title: st?.title ?? c.state, meta: st?.meta ?? {} };
  const variables = messageVariables({ kind: c.kind, code: c.code ?? null, state, event: c.event, payload: c.payload, context: c.context, data: c.data });
  const source = c.template ?? messageSource(c.kind, DOC.messages);
  return messageText(c.kind, source, variables, DOC.lowered_templates);
}

describe("rejection messages are the Python runtime's", () => {
  it.each(DOC.cases.map((c, i) => [i, c.kind, c.template ?? "", c] as const))("case %i: %s %s", (_i, _k, _t, c) => {
    expect(message(c)).toBe(c.message);
  });
});
