import { describe, expect, it } from "vitest";
import type { BlobStore } from "@assemblyline-agents/core";
import { agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

/**
 * A tool that outlives its run's maxDurationMs goes on in the background after the run has failed.
 * What it then writes to durable memory or the blob store is refused, as its ctx.emit and ctx.step are.
 */
type LateWrites = { __lateWrites?: Record<string, string>; __lateWritesDone?: () => void };
const shared = globalThis as LateWrites;

/** A blob store as plugins write them: a class whose methods read a private field. */
class PrivateFieldBlobStore implements BlobStore {
  readonly #blobs = new Map<string, { body: Uint8Array; contentType: string }>();
  async put(key: string, body: Uint8Array, options?: { contentType?: string }) {
    this.#blobs.set(key, { body, contentType: options?.contentType ?? "application/octet-stream" });
    return { key, size: body.byteLength };
  }
  async get(key: string) {
    return this.#blobs.get(key);
  }
  async delete(key: string) {
    this.#blobs.delete(key);
  }
  async list(prefix = "") {
    return [...this.#blobs.keys()].filter((key) => key.startsWith(prefix));
  }
}

/** A blob store as a plain object whose methods are frozen in place. */
function frozenBlobStore(): BlobStore {
  const blobs = new Map<string, { body: Uint8Array; contentType: string }>();
  return Object.freeze({
    async put(key: string, body: Uint8Array, options?: { contentType?: string }) {
      blobs.set(key, { body, contentType: options?.contentType ?? "application/octet-stream" });
      return { key, size: body.byteLength };
    },
    async get(key: string) {
      return blobs.get(key);
    },
    async delete(key: string) {
      blobs.delete(key);
    },
    async list(prefix = "") {
      return [...blobs.keys()].filter((key) => key.startsWith(prefix));
    },
  });
}

const lateWriter = toolSource({
  upFront: true,
  execute: `await new Promise((resolve) => setTimeout(resolve, 800));
    const outcomes = (globalThis.__lateWrites = {});
    const attempt = async (name, write) => {
      try { await write(); outcomes[name] = "written"; }
      catch (error) { outcomes[name] = "refused: " + (error && error.code); }
    };
    await attempt("memory.write", () => ctx.memory.write({ path: "late.md", content: "written after the run stopped" }));
    await attempt("memory.delete", () => ctx.memory.delete({ path: "kept.md" }));
    await attempt("blob.put", () => ctx.blob.put("late.txt", new TextEncoder().encode("late")));
    await attempt("blob.delete", () => ctx.blob.delete("kept.txt"));
    // The filesystem the built-in file tools (write, edit, delete) reach through their ctx.
    const files = ctx[Symbol.for("assembly-line.runtime-filesystem")];
    await attempt("files.write", () => files.write("/memory/late-file.md", "written after the run stopped"));
    await attempt("files.delete", () => files.delete("/memory/kept.md"));
    await attempt("blob.list", async () => { if ((await ctx.blob.list()).join() !== "kept.txt") throw new Error("blob.list lost its store"); });
    globalThis.__lateWritesDone?.();
    return { ok: true };`,
});

describe("a tool call the run stopped waiting for writes no memory and no blob", () => {
  it.each([
    ["a class instance with a private field", (): BlobStore => new PrivateFieldBlobStore()],
    ["a frozen object", frozenBlobStore],
  ])("refuses ctx.memory, ctx.blob and file-tool writes once maxDurationMs failed the run, and still reads, the blob store being %s", async (_, makeBlobStore) => {
    const blob = makeBlobStore();
    await blob.put("kept.txt", new TextEncoder().encode("kept"));
    const { runtime, state } = await startAgent(
      agentFolder({
        "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", budgets: { maxDurationMs: 300 } });
`,
        "tools/slow.ts": lateWriter,
      }),
      [{ toolCalls: [{ name: "slow", input: { value: "x" } }] }, { text: "done" }],
      { blob },
    );
    await state.writeMemory("kept.md", "kept");
    shared.__lateWrites = undefined;
    const lateWritesDone = new Promise<void>((resolve) => {
      shared.__lateWritesDone = resolve;
    });

    const result = await runtime.run({ message: "go" });
    expect(result).toMatchObject({ status: "failed", error: { code: "AL_ERR_BUDGET_EXCEEDED" } });
    // The tool goes on in the background until it has tried every write.
    await lateWritesDone;

    expect(shared.__lateWrites).toEqual({
      "memory.write": "refused: AL_ERR_BUDGET_EXCEEDED",
      "memory.delete": "refused: AL_ERR_BUDGET_EXCEEDED",
      "blob.put": "refused: AL_ERR_BUDGET_EXCEEDED",
      "blob.delete": "refused: AL_ERR_BUDGET_EXCEEDED",
      "files.write": "refused: AL_ERR_BUDGET_EXCEEDED",
      "files.delete": "refused: AL_ERR_BUDGET_EXCEEDED",
      "blob.list": "written",
    });
    expect(await state.readMemory("late.md")).toBeUndefined();
    expect(await state.readMemory("late-file.md")).toBeUndefined();
    expect((await state.readMemory("kept.md"))?.content).toBe("kept");
    expect(await blob.list()).toEqual(["kept.txt"]);
  });
});
