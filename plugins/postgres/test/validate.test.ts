import { describe, expect, it } from "vitest";
import { ArgumentCheck } from "../src/validate.js";

const refusal = (value: unknown): string => {
  try {
    new ArgumentCheck("completeScheduleRun").time("nextRunAt", value);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`expected ${String(value)} to be refused`);
};

describe("argument refusals", () => {
  it("name a Date, an Invalid Date, NaN and ±Infinity as what they are, not as JSON shows them", () => {
    expect(refusal(new Date("nope"))).toContain("nextRunAt must be an ISO-8601 time, got an Invalid Date");
    expect(refusal(Number.NaN)).toContain("got NaN");
    expect(refusal(Number.POSITIVE_INFINITY)).toContain("got Infinity");
    expect(refusal(Number.NEGATIVE_INFINITY)).toContain("got -Infinity");
    expect(refusal(0)).toContain("got 0");
    expect(refusal(undefined)).toContain("got undefined");
    expect(refusal("garbage")).toContain('got "garbage"');
    expect(refusal({ at: 1 })).toContain('got {"at":1}');
    expect(() => new ArgumentCheck("putFileRecord").text("record.createdAt", new Date(0))).toThrow(
      'record.createdAt must be a string, got the Date 1970-01-01T00:00:00.000Z',
    );
  });
});
