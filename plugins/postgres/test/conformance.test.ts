import { isStateAdapter } from "@assemblyline-agents/core";
import { describeStateConformance } from "@assemblyline-agents/core/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { dropSchema, probeDatabase, randomSchema, testPool } from "./support/database.js";

const probe = await probeDatabase("PostgresStateAdapter conformance");

if (probe.available) {
  const pool = testPool({ max: 20 });
  const filePrefix = randomSchema("al_kit");
  let counter = 0;
  afterAll(async () => {
    // Per-test schemas are dropped by cleanup; this catches any a failed test left behind.
    const { rows } = await pool.query<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)", [filePrefix]);
    for (const row of rows) await dropSchema(pool, row.nspname);
    await pool.end();
  });

  const freshSchema = async () => {
    counter += 1;
    const schema = `${filePrefix}_${counter}`;
    const state = new PostgresStateAdapter({ pool, schema });
    await state.migrate();
    return {
      state,
      cleanup: async () => {
        await state.close();
        await dropSchema(pool, schema);
      },
    };
  };

  describeStateConformance("PostgresStateAdapter", freshSchema, {
    facets: ["runs", "conversations", "schedules", "files", "usage", "sandboxSessions", "memory", "settings", "skills"],
  });

  describe("PostgresStateAdapter", () => {
    it("implements the whole StateAdapter", () => {
      expect(isStateAdapter(new PostgresStateAdapter({ pool }))).toBe(true);
    });
  });
} else {
  describe.skip(`PostgresStateAdapter conformance (${probe.reason})`, () => {
    it("needs PostgreSQL", () => undefined);
  });
}
