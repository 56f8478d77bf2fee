import { describe, expect, it } from "vitest";
import type { JsonValue, MemoryStateStore } from "@assemblyline-agents/core";
import { InMemoryStateAdapter } from "../src/index.js";
import { MAX_MEMORY_PATH_BYTES } from "../src/filesystem/memory-file-checks.js";
import { createMemoryApi } from "../src/state/memory-api.js";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";
import { outputOf } from "./support/probe-harness.js";
import { startAgent } from "./support/runtime.js";
import { sharedPostgres } from "./support/shared-postgres.js";

const pg = await sharedPostgres("memory-write-limits");

/** A path below /memory/ of exactly `bytes` UTF-8 bytes. */
const pathOf = (bytes: number) => `${"n".repeat(bytes - 3)}.md`;

const REFUSED: Array<[string, { path: string; content: string }, string]> = [
  ["content holding a NUL character", { path: "/memory/notes.md", content: "a\u0000b" }, "AL_ERR_MEMORY_CONTENT_INVALID"],
  ["content holding a lone surrogate", { path: "/memory/notes.md", content: "cut \ud83d" }, "AL_ERR_MEMORY_CONTENT_INVALID"],
  ["a path over the limit", { path: `/memory/${pathOf(MAX_MEMORY_PATH_BYTES + 1)}`, content: "x" }, "AL_ERR_PATH_TOO_LONG"],
  ["a path holding a lone surrogate", { path: "/memory/cut-\udc00.md", content: "x" }, "AL_ERR_PATH_ESCAPE"],
];

const stores: Array<[string, () => Promise<MemoryStateStore>]> = [["in memory", async () => new InMemoryStateAdapter()]];
if (pg.available) stores.push(["on PostgreSQL", async () => pg.state(pg.schema("memlimits"))]);

describe.each(stores)("a /memory write every state store can keep, %s", (_, makeStore) => {
  /** One model turn of `calls` on `state`: the run's status and each call's result. */
  async function runCalls(state: MemoryStateStore, calls: Array<{ name: string; input: JsonValue }>) {
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ toolCalls: calls }, { text: "done" }], { state: state as never });
    const result = await runtime.run({ message: "go" });
    return { status: result.status, outputs: log.outcomes.map((entry) => outputOf(entry.outcome)) };
  }

  it.each(REFUSED)("refuses %s as a result the model can correct, writing nothing, and the run goes on", async (_, input, code) => {
    const state = await makeStore();
    const { status, outputs } = await runCalls(state, [{ name: "write", input }]);
    expect(outputs[0]).toEqual({ code, error: expect.any(String) });
    expect(status).toBe("completed");
    expect(await state.listMemory()).toEqual([]);
  });

  it("refuses an edit that would put a NUL character in a memory file, leaving the file as it was", async () => {
    const state = await makeStore();
    const { status, outputs } = await runCalls(state, [
      { name: "write", input: { path: "/memory/notes.md", content: "milk" } },
      { name: "edit", input: { path: "/memory/notes.md", oldText: "milk", newText: "mi\u0000lk" } },
    ]);
    expect(outputs[1]).toEqual({ code: "AL_ERR_MEMORY_CONTENT_INVALID", error: expect.any(String) });
    expect(status).toBe("completed");
    expect((await state.readMemory("notes.md"))?.content).toBe("milk");
  });

  it(`keeps a path of exactly ${MAX_MEMORY_PATH_BYTES} bytes, in characters of several bytes too`, async () => {
    const state = await makeStore();
    const multiByte = `${"é".repeat((MAX_MEMORY_PATH_BYTES - 4) / 2)}a.md`;
    expect(Buffer.byteLength(multiByte)).toBe(MAX_MEMORY_PATH_BYTES);
    const { outputs } = await runCalls(state, [
      { name: "write", input: { path: `/memory/${pathOf(MAX_MEMORY_PATH_BYTES)}`, content: "x" } },
      { name: "write", input: { path: `/memory/${multiByte}`, content: "y" } },
    ]);
    expect(outputs.map((output) => (output as { error?: string }).error)).toEqual([undefined, undefined]);
    expect((await state.readMemory(multiByte))?.content).toBe("y");
  });

  it("refuses the same writes through ctx.memory, with the code and a fix", async () => {
    const state = await makeStore();
    const memory = createMemoryApi(state);
    for (const [what, input, code] of REFUSED) {
      await expect(memory.write(input), what).rejects.toMatchObject({ code, fix: expect.any(String) });
    }
    expect(await state.listMemory()).toEqual([]);
  });
});
