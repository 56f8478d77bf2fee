import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { onTestFinished } from "vitest";
import { codexHome, ResponsesServer } from "../src/testkit/index.js";
export { codexHome, codexRuns } from "../src/testkit/index.js";

export function agentFolder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "al-codex-agent-"));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

export function removeAll(dirs: string[]): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** `dir` as it is, removed when the current test ends. */
export function removedWhenTestEnds(dir: string): string {
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A temporary folder, removed when the current test ends. */
export function scratchDir(prefix: string): string {
  return removedWhenTestEnds(mkdtempSync(join(tmpdir(), prefix)));
}

/**
 * A local Responses API server and a CODEX_HOME whose provider points at it with `apiKey`,
 * both stopped and removed when the current test ends.
 */
export async function localCodexModel(apiKey: string): Promise<{ server: ResponsesServer; home: string }> {
  const server = await new ResponsesServer(apiKey).start();
  onTestFinished(() => server.stop());
  return { server, home: removedWhenTestEnds(codexHome(server.baseUrl, apiKey)) };
}

export const NOTES_AGENT = {
  "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "openai-codex/gpt-5.1-codex", instructions: "You keep notes for the user.", defaultTools: ["lookup_notes", "record_note"] });
`,
  "tools/lookup_notes.ts": `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Find notes about a topic.",
  inputSchema: { type: "object", properties: { topic: { type: "string" } }, required: ["topic"], additionalProperties: false },
  async execute(input, ctx) {
    await ctx.emit("notes.looked_up", { topic: input.topic, pid: process.pid });
    return { notes: ["Buy " + input.topic + " on the way home"] };
  },
});
`,
  "tools/record_note.ts": `import { approvalRequired, defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Record a durable note.",
  inputSchema: { type: "object", properties: { note: { type: "string" } }, required: ["note"], additionalProperties: false },
  needsApproval: approvalRequired("Recording a note is a durable side effect."),
  async execute(input, ctx) {
    await ctx.emit("note.recorded", { note: input.note, pid: process.pid });
    return { recorded: input.note };
  },
});
`,
};
