// Every template case rendered by Jinja2 in the Python runtime (tests/ts/make_template_cases.py)
// renders to the same text from its lowered form here, or fails here too.
import { describe, expect, it } from "vitest";
import { RenderError, renderParts, renderSource, TemplateEvent, TemplateTime, type Part } from "../src/template.js";
import { isDict, type Dict } from "../src/values.js";
import { loadDocument } from "./cases.js";

interface TemplateCase {
  source: string;
  parts: Part[];
  variables: number;
  text?: string;
  error?: boolean;
}
const DOC = loadDocument("template_cases.json") as { variables: Dict[]; cases: TemplateCase[] };

function value(v: unknown): unknown {
  if (isDict(v) && typeof v.$event === "string") return new TemplateEvent(v.$event, v.payload as Dict);
  if (isDict(v) && typeof v.$time === "number") return new TemplateTime(v.$time);
  return v;
}

function variables(i: number): Dict {
  const out: Dict = {};
  for (const [k, v] of Object.entries(DOC.variables[i] ?? {})) out[k] = value(v);
  return out;
}

function render(c: TemplateCase): { text?: string; error?: boolean } {
  try {
    return { text: renderParts(c.parts, variables(c.variables)) };
  } catch (e) {
    if (e instanceof RenderError) return { error: true };
    throw e;
  }
}

describe("lowered templates render as Jinja2 renders their sources", () => {
  it.each(DOC.cases.map((c, i) => [i, c.source.slice(0, 60), c] as const))("case %i: %s", (_i, _s, c) => {
    expect(render(c)).toEqual(c.error ? { error: true } : { text: c.text });
  });

  it("renders a source by its lowered form, or as its own text when it has no markup", () => {
    const lowered = { "Hi {{ name }}": [{ text: "Hi " }, { print: { op: "var", value: "name" } }] };
    expect(renderSource("Hi {{ name }}", lowered, { name: "Ada" })).toBe("Hi Ada");
    expect(renderSource("Plain text.", lowered, {})).toBe("Plain text.");
    expect(() => renderSource("{{ x }}", lowered, {})).toThrow(RenderError);
    expect(() => renderSource("{{ y }}", { "{{ y }}": null }, {})).toThrow(RenderError);
  });
});
