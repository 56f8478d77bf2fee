import { isAssemblyLineError } from "@assemblyline-agents/core";
import { describe, expect, it, onTestFinished } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { probeDatabase } from "./support/database.js";
import { scratchSchemas } from "./support/scratch-schemas.js";

const probe = await probeDatabase("PostgreSQL run not found");

describe.skipIf(!probe.available)("PostgreSQL AL_ERR_RUN_NOT_FOUND", () => {
  const { admin, newSchema } = scratchSchemas("al_run_missing");

  it("names the run in its message and keeps the schema, which HTTP callers of a host must not learn, in details only", async () => {
    const schema = newSchema();
    const state = new PostgresStateAdapter({ pool: admin, schema });
    onTestFinished(() => state.close());
    await state.migrate();
    const writes: Array<[string, () => Promise<unknown>]> = [
      ["appendEvents", () => state.appendEvents("run_missing", [{ type: "a" }])],
      ["markObserved", () => state.markObserved("run_missing", 0)],
      ["acquireRunLease", () => state.acquireRunLease("run_missing", "replica", 1_000)],
    ];
    for (const [operation, write] of writes) {
      const error = await write().then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(isAssemblyLineError(error) && error.code, operation).toBe("AL_ERR_RUN_NOT_FOUND");
      const { message, details } = error as { message: string; details: Record<string, unknown> };
      expect(message, operation).toContain('no run with id "run_missing"');
      expect(message, operation).not.toContain(schema);
      expect(details, operation).toMatchObject({ runId: "run_missing", schema });
    }
  });
});
