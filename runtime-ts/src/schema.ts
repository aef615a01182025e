// JSON Schemas of a flow's payloads and context, as the Python runtime writes them
// (runtime/validate.py `Type.schema` and `object_schema`): draft 2020-12 vocabulary, records
// inlined, a field with a default carrying it. Tools (src/tools.ts) are built from these.
import type { FieldDef, FlowDef } from "./ir.js";
import type { TypeRef } from "./types.js";

export type JsonSchema = Record<string, unknown>;

/** The schema of a value of the IR type `ref` in `flow` (its enums and records). */
export function typeSchema(flow: FlowDef, ref: TypeRef): JsonSchema {
  const kind = ref.kind;
  switch (kind) {
    case "bool":
      return { type: "boolean" };
    case "int":
    case "float":
      return numberSchema(kind, ref);
    case "str":
      return { type: "string" };
    case "enum":
      return { type: "string", enum: enumMembers(flow, ref.name ?? "") };
    case "json":
      return {};
    case "list":
      return { type: "array", items: typeSchema(flow, item(ref)) };
    case "map":
      return { type: "object", additionalProperties: typeSchema(flow, item(ref)) };
    case "optional":
      return { anyOf: [typeSchema(flow, item(ref)), { type: "null" }] };
    case "record":
      return recordSchema(flow, ref.name ?? "");
    default:
      throw new TypeError(`unknown type kind ${JSON.stringify(kind)}`);
  }
}

function numberSchema(kind: "int" | "float", ref: TypeRef): JsonSchema {
  const out: JsonSchema = { type: kind === "int" ? "integer" : "number" };
  if (typeof ref.min === "number") out.minimum = ref.min;
  if (typeof ref.max === "number") out.maximum = ref.max;
  return out;
}

function item(ref: TypeRef): TypeRef {
  const found = ref.item;
  if (found === undefined || found === null) throw new TypeError(`a ${ref.kind} type needs an item type`);
  return found;
}

function enumMembers(flow: FlowDef, name: string): string[] {
  const found = flow.enums.find((e) => e.name === name);
  if (found === undefined) throw new TypeError(`unknown enum ${JSON.stringify(name)}`);
  return [...found.members].sort(codePointOrder);
}

/** Python's default string order (by code point), not the locale's. */
export function codePointOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function recordSchema(flow: FlowDef, name: string): JsonSchema {
  const found = flow.records.find((r) => r.name === name);
  if (found === undefined) throw new TypeError(`unknown record type ${JSON.stringify(name)}`);
  return objectSchema(flow, found.fields, name);
}

/** The schema of an object with `fields` (an event's payload, a record, the context). */
export function objectSchema(flow: FlowDef, fields: FieldDef[], title?: string): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const field of fields) {
    const prop = typeSchema(flow, field.type);
    properties[field.name] = field.required === false ? { ...prop, default: field.default ?? null } : prop;
  }
  const out: JsonSchema = { type: "object" };
  if (title !== undefined && title !== "") out.title = title;
  out.properties = properties;
  out.required = fields.filter((f) => f.required !== false).map((f) => f.name);
  out.additionalProperties = false;
  return out;
}

/** The schema of event `name`'s payload. */
export function eventSchema(flow: FlowDef, name: string): JsonSchema {
  const found = flow.events.find((e) => e.name === name);
  return objectSchema(flow, found?.fields ?? [], name);
}

/** The schema of the context. */
export function contextSchema(flow: FlowDef): JsonSchema {
  return objectSchema(flow, flow.context, "context");
}
