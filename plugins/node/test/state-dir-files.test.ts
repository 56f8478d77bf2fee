import { cpSync, existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "@assemblyline-agents/core";
import { FileStateAdapter, LocalBlobStore, type LocalSandboxAdapter } from "@assemblyline-agents/local";
import { OpenEveRuntime, buildAgent, loadRuntimeBundle } from "@assemblyline-agents/runtime";
import { main } from "../src/cli/main.js";
import { EXIT } from "../src/cli/exit-codes.js";
import type { CommandIO } from "../src/cli/io.js";
import { openLocalDefaults } from "../src/host/local-defaults.js";
import { tempDir } from "./support/host.js";

// A deploy keeps runs in --state-dir while each release has an agent folder of its own: a run
// paused in one release and resumed in the next must find the attachments and /workspace files
// it wrote before the pause.

const AGENT_FILES: Record<string, string> = {
  "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "files", model: "scripted:unused", defaultTools: ["stash", "check"] });\n`,
  // Writes an attachment and a /workspace file, then the next tool (after approval) reads both back.
  "tools/stash.ts": `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Keep the shopping list.",
  inputSchema: { type: "object", properties: {}, additionalProperties: false },
  async execute(_input, ctx) {
    await ctx.blob!.put("lists/" + ctx.runId + ".txt", new TextEncoder().encode("milk from the blob"));
    await (await ctx.getSandbox()).writeFile("/workspace/list.txt", "milk from the workspace");
    return { kept: true };
  },
});
`,
  "tools/check.ts": `import { approvalRequired, defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Read the shopping list back.",
  inputSchema: { type: "object", properties: {}, additionalProperties: false },
  needsApproval: approvalRequired("Reading the list back happens after a pause.", "idempotent"),
  async execute(_input, ctx) {
    const blob = await ctx.blob!.get("lists/" + ctx.runId + ".txt");
    const sandbox = await ctx.getSandbox();
    const file = await sandbox.readFile("/workspace/list.txt").then((bytes) => new TextDecoder().decode(bytes), () => null);
    const read = { blob: blob ? new TextDecoder().decode(blob.body) : null, file };
    await ctx.emit("list.read", read);
    return read;
  },
});
`,
};

/** The scripted model, outside the agent folders: a run keeps the model it started on. */
function listScript(): string {
  const file = join(tempDir("al-state-dir-model-"), "list.json");
  writeFileSync(file, JSON.stringify({ turns: [{ toolCalls: [{ name: "stash", input: {} }] }, { toolCalls: [{ name: "check", input: {} }] }, { text: "done" }] }));
  return `scripted:${file}`;
}

const BOTH_READ = { blob: "milk from the blob", file: "milk from the workspace" };

function writeAgent(agentDir: string): void {
  for (const [file, text] of Object.entries(AGENT_FILES)) {
    mkdirSync(join(agentDir, file, ".."), { recursive: true });
    writeFileSync(join(agentDir, file), text);
  }
}

/** The next release: the built agent folder copied to a folder of its own, as a deploy ships it (without what a host kept beside it). */
function nextRelease(agentDir: string): string {
  const release = join(tempDir("al-state-dir-release-"), "agent");
  const kept = [".assembly-line/blobs", ".assembly-line/sandboxes", ".assembly-line/state"].map((path) => join(agentDir, path));
  cpSync(agentDir, release, { recursive: true, filter: (source) => !kept.some((path) => source === path || source.startsWith(`${path}/`)) });
  return release;
}

interface Ran {
  code: number;
  out: string;
  err: string;
}

async function cli(args: string[]): Promise<Ran> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CommandIO = { out: (line) => void out.push(line), err: (line) => void err.push(line) };
  const code = await main(args, io);
  return { code, out: out.join("\n"), err: err.join("\n") };
}

function listRead(events: RunEvent[]): unknown {
  return events.find((event) => event.type === "list.read")?.data;
}

/** The embedded defaults `start` and `dev` open for `agentDir` on `stateDir`, as a runtime. */
async function startRelease(agentDir: string, stateDir: string): Promise<{ runtime: OpenEveRuntime; close(): Promise<void> }> {
  const bundle = await loadRuntimeBundle(join(agentDir, ".assembly-line"));
  const local = await openLocalDefaults(bundle, { stateDir });
  const runtime = new OpenEveRuntime({ ...bundle, state: local.state, blob: local.blob, sandbox: local.sandbox, defaultHarness: local.defaultHarness });
  return {
    runtime,
    close: async () => {
      await runtime.close();
      await local.close();
    },
  };
}

describe("a paused run's files across releases that share --state-dir", () => {
  it("resumes with the attachment and /workspace file it wrote in the release that paused it (run, then approve)", async () => {
    const first = join(tempDir("al-state-dir-agent-"), "agent");
    writeAgent(first);
    const stateDir = join(tempDir("al-state-dir-"), "state");
    const paused = await cli(["run", first, "-m", "keep my list", "--model", listScript(), "--state-dir", stateDir, "--json"]);
    expect(paused.code, paused.err).toBe(EXIT.paused);
    const { runId, status } = JSON.parse(paused.out).data.result;
    expect(status).toBe("waiting_approval");

    const second = nextRelease(first);
    const approved = await cli(["approve", runId, "--agent", second, "--state-dir", stateDir, "--json"]);
    expect(approved.code, `${approved.out}\n${approved.err}`).toBe(EXIT.ok);
    const { result, events } = JSON.parse(approved.out).data;
    expect(result.status).toBe("completed");
    expect(listRead(events)).toMatchObject(BOTH_READ);
  }, 60_000);

  it("resumes with them under start's defaults too", async () => {
    const first = join(tempDir("al-state-dir-agent-"), "agent");
    writeAgent(first);
    await buildAgent(first);
    const stateDir = join(tempDir("al-state-dir-"), "state");
    const one = await startRelease(first, stateDir);
    const paused = await one.runtime.run({ message: "keep my list", model: listScript() }).finally(() => one.close());
    expect(paused.status).toBe("waiting_approval");

    const second = nextRelease(first);
    const two = await startRelease(second, stateDir);
    try {
      const done = await two.runtime.approve(paused.runId, { actor: "test" });
      expect(done.status).toBe("completed");
      expect(listRead(await two.runtime.listEvents(paused.runId))).toMatchObject(BOTH_READ);
    } finally {
      await two.close();
    }
  }, 60_000);

  it("keeps using the agent folder's blobs and sandboxes that were kept there before, while the state folder has none", async () => {
    const agentDir = join(tempDir("al-state-dir-agent-"), "agent");
    writeAgent(agentDir);
    await buildAgent(agentDir);
    const stateDir = join(tempDir("al-state-dir-"), "state");
    // What a host on --state-dir kept beside the agent before blobs and sandboxes moved into the state folder.
    await new LocalBlobStore({ agentDir }).put("lists/earlier.txt", new TextEncoder().encode("kept before"));
    mkdirSync(join(agentDir, ".assembly-line/sandboxes/run_earlier/workspace"), { recursive: true });

    const bundle = await loadRuntimeBundle(join(agentDir, ".assembly-line"));
    const local = await openLocalDefaults(bundle, { stateDir });
    try {
      expect(await local.blob.list("lists/")).toEqual(["lists/earlier.txt"]);
      expect(await local.sandbox.listKeys?.()).toEqual(["run_earlier"]);
      await local.blob.put("lists/later.txt", new TextEncoder().encode("kept after"));
      await local.sandbox.acquire("run_later");
    } finally {
      await local.state.close?.();
      await local.close();
    }
    expect(existsSync(join(stateDir, "blobs"))).toBe(false);
    expect(existsSync(join(stateDir, "sandboxes"))).toBe(false);
    expect(readdirSync(join(agentDir, ".assembly-line/sandboxes")).sort()).toEqual(["run_earlier", "run_later"]);
  }, 60_000);

  it("keeps them in the state folder once it has them, and with no state folder beside the agent as before", async () => {
    const agentDir = join(tempDir("al-state-dir-agent-"), "agent");
    writeAgent(agentDir);
    await buildAgent(agentDir);
    const bundle = await loadRuntimeBundle(join(agentDir, ".assembly-line"));
    const stateDir = join(tempDir("al-state-dir-"), "state");

    const onState = await openLocalDefaults(bundle, { stateDir });
    await onState.blob.put("a.txt", new TextEncoder().encode("a"));
    await onState.sandbox.acquire("run_a");
    await onState.state.close?.();
    await onState.close();
    expect(await new LocalBlobStore({ directory: join(stateDir, "blobs") }).list()).toEqual(["a.txt"]);
    expect(readdirSync(join(stateDir, "sandboxes"))).toEqual(["run_a"]);

    const beside = await openLocalDefaults(bundle);
    await beside.blob.put("b.txt", new TextEncoder().encode("b"));
    await beside.sandbox.acquire("run_b");
    await beside.state.close?.();
    await beside.close();
    expect(await new LocalBlobStore({ agentDir }).list()).toEqual(["b.txt"]);
    expect(readdirSync(join(agentDir, ".assembly-line/sandboxes"))).toEqual(["run_b"]);

    // Files beside the agent no longer pull the state folder back there once it has its own.
    const again = await openLocalDefaults(bundle, { stateDir });
    try {
      expect(await again.blob.list()).toEqual(["a.txt"]);
    } finally {
      await again.state.close?.();
      await again.close();
    }
  }, 60_000);

  it("puts a local sandbox.ts's sandboxes in the state folder unless it names their root", async () => {
    const stateDir = join(tempDir("al-state-dir-"), "state");
    for (const root of [undefined, join(tempDir("al-state-dir-root-"), "sandboxes")]) {
      const agentDir = join(tempDir("al-state-dir-agent-"), "agent");
      writeAgent(agentDir);
      const options = { adapter: "local", defaultTimeoutMs: 5_000, ...(root ? { root } : {}) };
      writeFileSync(join(agentDir, "sandbox.ts"), `import { defineSandbox } from "@assemblyline-agents/core";\nexport default defineSandbox(${JSON.stringify(options)});\n`);
      await buildAgent(agentDir);
      const local = await openLocalDefaults(await loadRuntimeBundle(join(agentDir, ".assembly-line")), { stateDir });
      try {
        expect((local.sandbox as LocalSandboxAdapter).root).toBe(root ?? join(stateDir, "sandboxes"));
      } finally {
        await local.state.close?.();
        await local.close();
      }
    }
  }, 60_000);

  it("keeps the blobs and sandboxes in the state folder when the file state folds its log into a snapshot", async () => {
    const first = join(tempDir("al-state-dir-agent-"), "agent");
    writeAgent(first);
    await buildAgent(first);
    const stateDir = join(tempDir("al-state-dir-"), "state");
    const one = await startRelease(first, stateDir);
    const paused = await one.runtime.run({ message: "keep my list", model: listScript() }).finally(() => one.close());
    expect(paused.status).toBe("waiting_approval");

    // Reopened to fold at once: the compaction removes the files it replaced in the folder.
    await (await FileStateAdapter.open({ directory: stateDir, compactAfterBytes: 1, compactWhenSuperseded: 0 })).close();
    expect(readdirSync(stateDir)).toContain("snapshot.json");

    const two = await startRelease(nextRelease(first), stateDir);
    try {
      await two.runtime.approve(paused.runId, { actor: "test" });
      expect(listRead(await two.runtime.listEvents(paused.runId))).toMatchObject(BOTH_READ);
    } finally {
      await two.close();
    }
  }, 60_000);
});
