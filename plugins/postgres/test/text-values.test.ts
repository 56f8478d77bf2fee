import { isAssemblyLineError, type NewRun } from "@assemblyline-agents/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { dropSchema, probeDatabase, randomSchema, testPool } from "./support/database.js";

const probe = await probeDatabase("PostgresStateAdapter text values");

const newRun = (id: string): NewRun => ({ id, agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } });

async function refusal(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(() => undefined, (caught: unknown) => caught);
  expect(isAssemblyLineError(error, "AL_ERR_STATE_INPUT_INVALID"), String(error)).toBe(true);
  return error as Error;
}

describe.skipIf(!probe.available)("PostgresStateAdapter: text PostgreSQL cannot hold", () => {
  const schema = randomSchema();
  const pool = testPool();
  const state = new PostgresStateAdapter({ pool, schema });

  beforeAll(async () => {
    await state.migrate();
  });
  afterAll(async () => {
    await state.close();
    await dropSchema(pool, schema);
    await pool.end();
  });

  it("never lets two ids that differ in a lone surrogate meet in one row", async () => {
    // UTF-8 cannot encode a lone surrogate: sent as is, both ids would be stored as "run-\ufffd".
    await refusal(state.createRun(newRun("run-\ud800")));
    await refusal(state.createRun(newRun("run-\udc00")));
    await state.createRun(newRun("run-\ufffd"));
    await refusal(state.getRun("run-\ud800"));
    expect((await state.listRuns({ agentId: "agent" })).runs.map((run) => run.id)).toEqual(["run-\ufffd"]);
  });

  it("refuses memory content that would be stored changed, and keeps what was there", async () => {
    await state.writeMemory("/memory/notes.md", "kept");
    const error = await refusal(state.writeMemory("/memory/notes.md", "cut emoji \ud83d"));
    expect(error.message).toContain("lone UTF-16 surrogate");
    await refusal(state.writeMemory("/memory/notes.md", "nul \u0000 byte"));
    await refusal(state.writeMemory("/memory/a\u0000b", "x"));
    expect((await state.readMemory("/memory/notes.md"))?.content).toBe("kept");
    expect(await state.listMemory("/memory/")).toEqual(["/memory/notes.md"]);
  });

  it("names the call with the odd characters escaped, never as raw control characters", async () => {
    const error = await refusal(state.putSetting("key\u0000", { v: 1 }, { actor: "ops" }));
    expect(error.message).toContain('putSetting(key "key\\u0000")');
    expect(error.message).not.toContain("\u0000");
  });

  it("keeps NUL and lone surrogates inside JSON payloads exactly", async () => {
    const { run } = await state.createRun(newRun("run-json"));
    const data = { nul: "a\u0000b", high: "\ud800", low: "x\udc00y", pair: "\ud83d\ude00" };
    await state.appendEvents(run.id, [{ type: "note", data }]);
    expect((await state.listEvents(run.id, { afterSeq: 1 }))[0]?.data).toEqual(data);
    await state.putSetting("payload", data, { actor: "ops" });
    expect(await state.getSetting("payload")).toEqual(data);
  });

  it("refuses an event whose type would not be stored as given, writing nothing", async () => {
    const { run } = await state.createRun(newRun("run-type"));
    await refusal(state.appendEvents(run.id, [{ type: "ok" }, { type: "bad\u0000" }]));
    expect((await state.getRun(run.id))?.lastSeq).toBe(1);
  });
});
