// The value model (src/values.ts, src/jsontext.ts): Python's ints, floats and JSON, held in
// JavaScript.
import { describe, expect, it } from "vitest";
import { parseJSON } from "../src/jsontext.js";
import { Limits } from "../src/limits.js";
import { dumps, Float, floatRepr, fromPlain, isFloat, isInt, mkFloat, repr, strLen, toPlain } from "../src/values.js";

describe("JSON text is read as Python reads it", () => {
  it("tells ints from floats and keeps big integers exact", () => {
    const v = parseJSON('{"i": 2, "f": 2.0, "e": 1e3, "big": 123456789012345678901234567890, "h": 0.5}') as Record<string, unknown>;
    expect(isInt(v.i) && !isFloat(v.i)).toBe(true);
    expect(v.f).toBeInstanceOf(Float);
    expect(v.e).toBeInstanceOf(Float);
    expect(v.big).toBe(123456789012345678901234567890n);
    expect(v.h).toBe(0.5);
  });
  it("reads NaN and the infinities, keeps key order and a __proto__ key as data", () => {
    const v = parseJSON('{"b": NaN, "a": -Infinity, "__proto__": {"x": 1}}') as Record<string, unknown>;
    expect(Object.keys(v)).toEqual(["b", "a", "__proto__"]);
    expect(Number.isNaN(v.b)).toBe(true);
    expect(v.a).toBe(-Infinity);
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
  });
  it("refuses text that is not JSON", () => {
    expect(() => parseJSON("{1: 2}")).toThrow(SyntaxError);
    expect(() => parseJSON("[1, 2")).toThrow(SyntaxError);
    expect(() => parseJSON("[] x")).toThrow(SyntaxError);
  });
  it("writes back what it read, as json.dumps does", () => {
    const text = '{"i": 2, "f": 2.0, "s": "h\\u00e9\\n", "l": [1e+16, 1e-05, 0.0001, -0.0, null, true]}';
    expect(dumps(parseJSON(text))).toBe('{"i": 2, "f": 2.0, "s": "hé\\n", "l": [1e+16, 1e-05, 0.0001, -0.0, null, true]}');
  });
});

describe("floats", () => {
  it("print as Python's repr", () => {
    const cases: [number, string][] = [[1, "1.0"], [0.1, "0.1"], [1e16, "1e+16"], [1e15, "1000000000000000.0"], [1.5e-7, "1.5e-07"], [-0, "-0.0"], [NaN, "nan"], [-Infinity, "-inf"], [123.456, "123.456"]];
    for (const [n, text] of cases) expect(floatRepr(n)).toBe(text);
  });
  it("an integral float is boxed, and still acts as a number for host code", () => {
    const two = mkFloat(2);
    expect(two).toBeInstanceOf(Float);
    expect(Number(two) * 3).toBe(6);
    expect(JSON.stringify({ x: two })).toBe('{"x":2}');
    expect(mkFloat(2.5)).toBe(2.5);
    expect(toPlain({ a: [two, 7n] })).toEqual({ a: [2, 7] });
    expect(fromPlain({ a: [2, 2.5] })).toEqual({ a: [2, 2.5] });
  });
});

describe("strings", () => {
  it("count code points and print as Python's repr", () => {
    expect(strLen("a😀b")).toBe(3);
    expect(repr(["it's", 'say "hi"', "a\tb", null, true, { k: 1.5 }])).toBe(`["it's", 'say "hi"', 'a\\tb', None, True, {'k': 1.5}]`);
  });
});

describe("limits", () => {
  it("have Python's defaults and refuse bounds that are not positive integers", () => {
    const limits = new Limits();
    expect(limits.maxString).toBe(1_000_000);
    expect(limits.maxIntDigits).toBe(1_000);
    expect(() => new Limits({ maxIntDigits: 5000 })).toThrow("max_int_digits must be from 1 to 4300");
    expect(() => new Limits({ maxItems: 0 })).toThrow("max_items must be a positive integer, got 0");
  });
  it("bound integers by digits, numbers and bigints alike", () => {
    const limits = new Limits({ maxIntDigits: 3 });
    expect(limits.intProblem(999)).toBeNull();
    expect(limits.intProblem(-1000)).toBe("the integer has more than 3 digits");
    expect(limits.intProblem(10n ** 20n)).toBe("the integer has more than 3 digits");
  });
});
