import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { InMemoryStateAdapter, buildAgent, loadRuntimeBundle } from "@assemblyline-agents/runtime";
import { resolveCodexCommand } from "@assemblyline-agents/codex";
import { spawnSync } from "node:child_process";
import { listenNodeRuntime, noopLogger, type NodeRuntimeHandle } from "../src/index.js";

const command = resolveCodexCommand({}, process.env);
const runs = spawnSync(command.file, [...command.args, "--version"], { encoding: "utf8", timeout: 30_000 }).status === 0;
if (!runs && process.env.CI === "true") throw new Error("the codex binary (@openai/codex) must run in CI");
if (!runs) console.warn("skipping: the codex binary does not run here");

const dirs: string[] = [];
const hosts: NodeRuntimeHandle[] = [];
afterAll(async () => {
  await Promise.allSettled(hosts.map((host) => host.shutdown({ timeoutMs: 2_000 })));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "al-node-codex-"));
  dirs.push(dir);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

describe.skipIf(!runs)("the Node host's built-in openai-codex route", () => {
  it("serves openai-codex/* models with the Codex engine, which asks for the CLI login rather than an API key", async () => {
    const agentDir = folder({
      "agent.ts": 'import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "openai-codex/gpt-5.1-codex", instructions: "Test." });\n',
      "channels/message.ts": 'import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: "/message", methods: ["POST"] });\n',
    });
    const { artifactRoot } = await buildAgent(agentDir);
    const loggedOut = folder({ "config.toml": "" });
    const host = await listenNodeRuntime({ ...(await loadRuntimeBundle(artifactRoot)), state: new InMemoryStateAdapter(), port: 0, host: "127.0.0.1", devMode: true, logger: noopLogger(), env: { ...process.env, CODEX_HOME: loggedOut, OPENAI_API_KEY: "" } });
    hosts.push(host);
    const response = await fetch(`${host.url}/message?wait=60`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ message: "hello" }) });
    const body = (await response.json()) as { status: string };
    expect(body.status).toBe("failed");
    expect(JSON.stringify(body)).toContain("AL_ERR_CODEX_LOGIN");
    expect(JSON.stringify(body)).toContain("npx codex login");
    expect(JSON.stringify(body)).not.toContain("OPENAI_API_KEY");
  });
});
