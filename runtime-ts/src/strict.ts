// OpenAI's strict mode wants every property required, `additionalProperties: false` on every
// object and no `default`: `strictSchema` rewrites a schema that way (an optional field becomes
// nullable, null meaning "the default"; a map becomes a list of `{key, value}` entries) and
// `fromStrict` turns arguments written against it back into the payload the flow declares.
// The same rewriting as runtime/tools.py's `strict_schema` / `from_strict`.
import type { JsonSchema } from "./schema.js";

/** Keywords strict mode does not take; `title` is dropped too, as nothing needs it there. */
const DROPPED = new Set(["default", "title"]);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function kept(schema: JsonSchema, also: string[]): JsonSchema {
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(schema)) if (!DROPPED.has(k) && !also.includes(k)) out[k] = structuredClone(v);
  return out;
}

function nullable(schema: JsonSchema): boolean {
  const anyOf = Array.isArray(schema.anyOf) ? (schema.anyOf as unknown[]) : [];
  return schema.type === "null" || anyOf.some((s) => isObject(s) && s.type === "null");
}

/** `schema` in the form strict mode accepts; `fromStrict` undoes it. */
export function strictSchema(schema: JsonSchema): JsonSchema {
  if (Array.isArray(schema.anyOf)) {
    return { ...kept(schema, ["anyOf"]), anyOf: (schema.anyOf as JsonSchema[]).map(strictSchema) };
  }
  const kind = schema.type;
  if (kind === "object" && isObject(schema.additionalProperties)) return strictMap(schema, schema.additionalProperties);
  if (kind === "object") return strictObject(schema);
  if (kind === "array" && isObject(schema.items)) return { ...kept(schema, ["items"]), items: strictSchema(schema.items) };
  return kept(schema, []);
}

function strictMap(schema: JsonSchema, value: JsonSchema): JsonSchema {
  const entry = {
    type: "object",
    properties: { key: { type: "string" }, value: strictSchema(value) },
    required: ["key", "value"],
    additionalProperties: false,
  };
  const out: JsonSchema = { ...kept(schema, ["type", "additionalProperties"]), type: "array", items: entry };
  const before = typeof schema.description === "string" && schema.description !== "" ? `${schema.description} ` : "";
  out.description = `${before}A map, written as a list of {key, value} entries.`;
  return out;
}

function strictObject(schema: JsonSchema): JsonSchema {
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const props: Record<string, JsonSchema> = {};
  const given = isObject(schema.properties) ? (schema.properties as Record<string, JsonSchema>) : {};
  for (const [name, prop] of Object.entries(given)) {
    let converted = strictSchema(prop);
    if (!required.has(name) && !nullable(converted)) {
      const inner = converted;
      converted = { anyOf: [inner, { type: "null" }] };
      if ("description" in inner) {
        converted.description = inner.description;
        delete inner.description;
      }
    }
    props[name] = converted;
  }
  return {
    ...kept(schema, ["properties", "required", "additionalProperties"]),
    properties: props,
    required: Object.keys(props),
    additionalProperties: false,
  };
}

/** Arguments written against `strictSchema(schema)` as the payload `schema` describes: null
 * for an optional, non-nullable property is left out (it takes its default), `{key, value}`
 * entry lists become maps. A value of another shape is left as it is, for validation. */
export function fromStrict(schema: JsonSchema, value: unknown): unknown {
  if (Array.isArray(schema.anyOf)) {
    if (value === null) return null;
    const branch = (schema.anyOf as JsonSchema[]).find((b) => b.type !== "null");
    return branch === undefined ? value : fromStrict(branch, value);
  }
  const kind = schema.type;
  if (kind === "object" && isObject(schema.additionalProperties)) return fromEntries(schema.additionalProperties, value);
  if (kind === "object" && isObject(value)) return fromStrictObject(schema, value);
  if (kind === "array" && Array.isArray(value) && isObject(schema.items)) {
    const items = schema.items;
    return value.map((v: unknown) => fromStrict(items, v));
  }
  return value;
}

function fromEntries(item: JsonSchema, value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  const entries = value as unknown[];
  const isEntry = (e: unknown): e is { key: unknown; value: unknown } =>
    isObject(e) && Object.keys(e).length === 2 && "key" in e && "value" in e;
  if (!entries.every(isEntry)) return value;
  const out: Record<string, unknown> = {};
  for (const e of entries) out[String(e.key)] = fromStrict(item, e.value);
  return out;
}

function fromStrictObject(schema: JsonSchema, value: Record<string, unknown>): Record<string, unknown> {
  const props = isObject(schema.properties) ? (schema.properties as Record<string, JsonSchema>) : {};
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const out: Record<string, unknown> = {};
  for (const [name, v] of Object.entries(value)) {
    const prop = props[name];
    if (prop === undefined) out[name] = v;
    else if (v === null && !required.has(name) && !nullable(prop)) continue;
    else out[name] = fromStrict(prop, v);
  }
  return out;
}
