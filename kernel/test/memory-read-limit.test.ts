import { MAX_MEMORY_FILE_BYTES } from "@assemblyline-agents/core";
import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";
import { outputOf } from "./support/probe-harness.js";
import { startAgent } from "./support/runtime.js";

/** The read tool's cap on one part, in UTF-8 bytes. */
const PART_BYTES = 64 * 1024;

/** Run the read tool on each input, over a state holding `memory`, and return what the model got back. */
async function reads(memory: Record<string, string>, inputs: Array<{ path: string; offset?: number }>) {
  const state = new InMemoryStateAdapter();
  for (const [path, content] of Object.entries(memory)) await state.writeMemory(path, content);
  const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ toolCalls: inputs.map((input) => ({ name: "read", input })) }, { text: "done" }], { state });
  expect((await runtime.run({ message: "go" })).status).toBe("completed");
  return log.outcomes.map((entry) => outputOf(entry.outcome) as { content: string; offset?: number; totalBytes?: number; nextOffset?: number | null; note?: string });
}

describe("the read tool on a large memory file", () => {
  it("hands back the first 64 KiB and the offset of the rest, never the whole file", async () => {
    const big = "x".repeat(MAX_MEMORY_FILE_BYTES);
    const [first] = await reads({ "huge.md": big }, [{ path: "/memory/huge.md" }]);
    expect(first!.content).toBe("x".repeat(PART_BYTES));
    expect(first).toMatchObject({ offset: 0, totalBytes: big.length, nextOffset: PART_BYTES, note: expect.stringContaining(`offset ${PART_BYTES}`) });
  });

  it("reads a file in parts that join to the file, splitting no character", async () => {
    // "€" is 3 bytes in UTF-8: 64 KiB ends inside one, so the part ends before it.
    const text = "€".repeat(50_000) + "tail";
    const total = Buffer.byteLength(text);
    const [first, second, third] = await reads({ "euro.md": text }, [
      { path: "/memory/euro.md" },
      { path: "/memory/euro.md", offset: 65_535 },
      { path: "/memory/euro.md", offset: 131_070 },
    ]);
    expect(first).toMatchObject({ offset: 0, nextOffset: 65_535, totalBytes: total });
    expect(second).toMatchObject({ offset: 65_535, nextOffset: 131_070 });
    expect(third).toMatchObject({ offset: 131_070, nextOffset: null, note: expect.stringContaining("the end of the file") });
    expect(first!.content + second!.content + third!.content).toBe(text);
  });

  it("starts a part at the character an offset falls inside", async () => {
    const [part] = await reads({ "euro.md": "a€b" }, [{ path: "/memory/euro.md", offset: 2 }]);
    expect(part).toMatchObject({ content: "€b", offset: 1, totalBytes: 5, nextOffset: null });
  });

  it("hands back a file up to 64 KiB whole, as path and content only", async () => {
    const [small, exact] = await reads({ "small.md": "notes", "exact.md": "y".repeat(PART_BYTES) }, [{ path: "/memory/small.md" }, { path: "/memory/exact.md" }]);
    expect(small).toEqual({ path: "/memory/small.md", content: "notes" });
    expect(exact).toEqual({ path: "/memory/exact.md", content: "y".repeat(PART_BYTES) });
  });
});

describe("the write tool on /memory past the memory file limit", () => {
  it("tells the model the file is too large and keeps what the file held, and the run goes on", async () => {
    const state = new InMemoryStateAdapter();
    await state.writeMemory("notes.md", "kept");
    const tooLarge = "x".repeat(MAX_MEMORY_FILE_BYTES + 1);
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ toolCalls: [{ name: "write", input: { path: "/memory/notes.md", content: tooLarge } }] }, { text: "done" }], { state });
    expect((await runtime.run({ message: "go" })).status).toBe("completed");
    expect(outputOf(log.outcomes[0]!.outcome)).toMatchObject({ code: "AL_ERR_MEMORY_TOO_LARGE", error: expect.stringContaining(`more than the ${MAX_MEMORY_FILE_BYTES}`) });
    expect((await state.readMemory("notes.md"))?.content).toBe("kept");
  });
});
