import { describe, expect, it } from "vitest";
import { headOf } from "../src/text-cut.js";
import { truncate } from "../src/telemetry/capture.js";

const isWellFormed = (text: string) => !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);

describe("cutting text for the context and telemetry", () => {
  it("never splits a character made of a surrogate pair", () => {
    const text = "ok 👍👍👍";
    for (let max = 1; max <= text.length; max += 1) {
      const head = headOf(text, max);
      expect(isWellFormed(head), `headOf(…, ${max}) = ${JSON.stringify(head)}`).toBe(true);
      expect(text.startsWith(head)).toBe(true);
      expect(head.length).toBeGreaterThanOrEqual(max - 1);
    }
    expect(headOf(text, 4)).toBe("ok ");
    expect(headOf(text, 5)).toBe("ok 👍");
    expect(isWellFormed(truncate("👍".repeat(10), 5))).toBe(true);
  });
});
