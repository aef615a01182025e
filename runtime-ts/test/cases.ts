// Reading the case files the Python runtime wrote (tests/ts/make_*_cases.py).
import { readFileSync } from "node:fs";
import { parseJSON } from "../src/jsontext.js";
import { Limits, type LimitValues } from "../src/limits.js";

export function loadCases<T>(name: string): T[] {
  const text = readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf-8");
  return parseJSON(text) as T[];
}

/** `Limits` from the Python keyword names (`max_int_digits`). */
export function limitsOf(given: Record<string, number> | undefined): Limits {
  const values: Partial<LimitValues> = {};
  for (const [k, v] of Object.entries(given ?? {})) {
    const name = k.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()) as keyof LimitValues;
    values[name] = v;
  }
  return new Limits(values);
}

export function loadDocument(name: string): unknown {
  const text = readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf-8");
  return parseJSON(text);
}
