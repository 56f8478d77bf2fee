import { describe, expect, it } from "vitest";
import { databaseError } from "../src/errors.js";

const pgError = (code: string, message = "refused") => Object.assign(new Error(message), { code });

describe("classifying PostgreSQL errors", () => {
  it.each([
    ["53300", "too many connections"],
    ["40P01", "deadlock detected"],
    ["40001", "could not serialize access"],
    ["57014", "canceling statement due to statement timeout"],
    ["57P01", "terminating connection due to administrator command"],
    ["08006", "connection failure"],
  ])("leaves runs resumable on SQLSTATE %s (%s)", (code, message) => {
    expect(databaseError(pgError(code, message), "appendEvents", "s").code).toBe("AL_ERR_STATE_UNAVAILABLE");
  });

  it("treats a pool ended by shutdown as unavailable, and a bad statement as a query error", () => {
    expect(databaseError(new Error("Cannot use a pool after calling end on the pool"), "getRun", "s").code).toBe("AL_ERR_STATE_UNAVAILABLE");
    expect(databaseError(pgError("42P01", 'relation "runs" does not exist'), "getRun", "s").code).toBe("AL_ERR_STATE_QUERY");
  });
});
