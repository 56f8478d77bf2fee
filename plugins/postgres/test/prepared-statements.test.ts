import type pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { dropSchema, probeDatabase, randomSchema, testPool } from "./support/database.js";

const probe = await probeDatabase("PostgresStateAdapter prepared statements");

/** The statement names the adapter sends through `pool` (undefined: an unnamed statement). */
function recordNames(pool: pg.Pool): Array<string | undefined> {
  const names: Array<string | undefined> = [];
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const config = args[0];
    names.push(typeof config === "object" && config !== null ? (config as { name?: string }).name : undefined);
    return query(...args);
  };
  return names;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function adapterOn(preparedStatements: boolean | undefined) {
  const pool = testPool();
  const schema = randomSchema();
  const state = new PostgresStateAdapter({ pool, schema, ...(preparedStatements === undefined ? {} : { preparedStatements }) });
  cleanups.push(async () => {
    await state.close();
    await dropSchema(pool, schema);
    await pool.end();
  });
  await state.migrate();
  return { state, names: recordNames(pool) };
}

async function writeAndRead(state: PostgresStateAdapter, id: string) {
  await state.createRun({ id, agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } });
  for (let i = 0; i < 3; i++) await state.appendEvents(id, [{ type: "tick", data: { i } }]);
  return state.getRun(id);
}

describe.skipIf(!probe.available)("PostgresStateAdapter prepared statements", () => {
  it("sends each statement text under one name by default, so a connection plans it once", async () => {
    const { state, names } = await adapterOn(undefined);
    expect((await writeAndRead(state, "r1"))?.lastSeq).toBe(4);
    expect(names.length).toBeGreaterThan(0);
    expect(names.every((name) => typeof name === "string" && name.startsWith("al_"))).toBe(true);
    // The three appends share one prepared statement.
    expect(new Set(names).size).toBeLessThan(names.length);
  });

  it("sends unnamed statements with preparedStatements: false, for poolers without prepared-statement support", async () => {
    const { state, names } = await adapterOn(false);
    expect((await writeAndRead(state, "r1"))?.lastSeq).toBe(4);
    expect(names.length).toBeGreaterThan(0);
    expect(names.every((name) => name === undefined)).toBe(true);
  });
});
