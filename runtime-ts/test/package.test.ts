import { describe, expect, it } from "vitest";
import { IR_VERSIONS } from "../src/index.js";

describe("package", () => {
  it("reads the IR versions the Python runtime reads", () => {
    expect(IR_VERSIONS).toEqual([1, 2, 3, 4, 5]);
  });
});
