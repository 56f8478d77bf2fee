import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { startAnthropicMessagesServer, startOpenAIChatServer, type ScriptedModelServer } from "../plugins/pi/src/testkit/servers/index.js";

const root = resolve(import.meta.dirname, "..");
const bin = join(root, "plugins/node/bin/assembly-line.js");

const copies: string[] = [];
afterAll(() => {
  for (const parent of copies.splice(0)) rmSync(parent, { recursive: true, force: true });
});

function exampleCopy(): string {
  const parent = mkdtempSync(join(tmpdir(), "al-provider-"));
  copies.push(parent);
  const dir = join(parent, "notes-agent");
  cpSync(join(root, "examples/notes-agent"), dir, { recursive: true, filter: (source) => !source.includes(".assembly-line") });
  return dir;
}

async function cli(args: string[], env: Record<string, string>) {
  return (await cliOutput(args, env)).stdout;
}

async function cliOutput(args: string[], env: Record<string, string>) {
  return promisify(execFile)(process.execPath, [bin, ...args], {
    cwd: root,
    env: { ...process.env, OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "", ASSEMBLY_LINE_LOG_LEVEL: "error", ...env },
  });
}

type LocalModelServer = ScriptedModelServer & { baseUrl: string };

let server: LocalModelServer | undefined;
afterEach(async () => server?.close());

/** A provider protocol the CLI speaks, its local server, and the environment that holds its key. */
interface Protocol {
  name: string;
  start: () => Promise<LocalModelServer>;
  model: string;
  api: string;
  env: Record<string, string>;
}

const protocols: Protocol[] = [
  { name: "OpenAI chat completions", start: () => startOpenAIChatServer({ apiKey: "sk-test" }), model: "openai/gpt-4o-mini", api: "openai-completions", env: { OPENAI_API_KEY: "sk-test" } },
  { name: "Anthropic messages", start: () => startAnthropicMessagesServer({ apiKey: "sk-ant-test" }), model: "anthropic/claude-sonnet-4-5", api: "anthropic-messages", env: { ANTHROPIC_API_KEY: "sk-ant-test" } },
];

describe.each(protocols)("assembly-line run against a local $name server", ({ start, model, api, env }) => {
  it("completes a run with a tool call and records the exact token counts the server reported", async () => {
    server = await start();
    server.toolCalls([{ id: "call_lookup_1", name: "lookup_notes", argumentChunks: ['{"que', 'ry": "mi', 'lk"}'] }], { inputTokens: 321, outputTokens: 17 });
    server.text(["No notes ", "about milk yet."], { inputTokens: 400, outputTokens: 9, cacheReadTokens: 128 });
    const agent = exampleCopy();

    const run = await cli(["run", agent, "--message", "What do I know about milk?", "--model", model, "--base-url", server.baseUrl, "--api", api, "--json"], env);
    const { data } = JSON.parse(run) as { data: { result: { status: string; runId: string; response: { text: string } }; events: Array<{ type: string; data: unknown }> } };
    const result = data.result;
    expect(result.status).toBe("completed");
    expect(result.response.text).toBe("No notes about milk yet.");
    expect(data.events.find((event) => event.type === "tool.completed")?.data).toMatchObject({ toolName: "lookup_notes", modelOutput: { query: "milk", matches: [] } });
    expect(server.requests).toHaveLength(2);

    const shown = JSON.parse(await cli(["runs", "show", result.runId, "--agent", agent, "--json"], env)).data;
    const usage = shown.usage.sort((a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id));
    expect(usage.map((record: { inputTokens: number; outputTokens: number; cacheReadTokens: number }) => [record.inputTokens, record.outputTokens, record.cacheReadTokens])).toEqual([
      [321, 17, 0],
      [400, 9, 128],
    ]);
    const text = await cli(["runs", "show", result.runId, "--agent", agent], env);
    expect(text).toMatch(/usage total: 721 in, 26 out/);
  }, 60_000);

  it("streams text deltas to the terminal with --stream while only the completed message is recorded", async () => {
    server = await start();
    server.text(["Hel", "lo ", "there"], { inputTokens: 5, outputTokens: 3 });
    const { stdout, stderr } = await cliOutput(["run", exampleCopy(), "--message", "hi", "--model", model, "--base-url", server.baseUrl, "--api", api, "--stream"], env);
    // One continuous stream, not a line per delta.
    expect(stderr).toContain("Hello there\n");
    expect(stdout.match(/model\.response/g)).toHaveLength(1);
    expect(stdout.trim().split("\n").at(-1)).toBe("Hello there");
  }, 60_000);
});
