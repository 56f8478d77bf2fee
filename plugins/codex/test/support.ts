import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { resolveCodexCommand } from "../src/index.js";

/** Does the real codex binary run here? The route's tests need it. */
export function codexRuns(): { ok: boolean; why: string } {
  const command = resolveCodexCommand({}, process.env);
  const result = spawnSync(command.file, [...command.args, "--version"], { encoding: "utf8", timeout: 30_000 });
  return result.status === 0 ? { ok: true, why: result.stdout.trim() } : { ok: false, why: `${command.file} ${command.args.join(" ")} --version failed: ${result.error?.message ?? result.stderr}` };
}

/**
 * A CODEX_HOME whose config.toml points the model provider at the local
 * Responses server; with `apiKey`, logged in through the real CLI
 * (`codex login --with-api-key`, which writes the session to auth.json).
 */
export function codexHome(baseUrl: string, apiKey?: string): string {
  const home = mkdtempSync(join(tmpdir(), "al-codex-home-"));
  writeFileSync(
    join(home, "config.toml"),
    [
      'model_provider = "local"',
      "[model_providers.local]",
      'name = "local Responses server"',
      `base_url = "${baseUrl}"`,
      'wire_api = "responses"',
      "requires_openai_auth = true",
      "",
    ].join("\n"),
  );
  if (apiKey) {
    const command = resolveCodexCommand({}, process.env);
    const login = spawnSync(command.file, [...command.args, "login", "--with-api-key"], { input: apiKey, encoding: "utf8", env: { ...process.env, CODEX_HOME: home }, timeout: 30_000 });
    if (login.status !== 0) throw new Error(`codex login --with-api-key failed: ${login.stderr}`);
  }
  return home;
}

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

export const NOTES_AGENT = {
  "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "openai-codex/gpt-5.1-codex", instructions: "You keep notes for the user." });
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
