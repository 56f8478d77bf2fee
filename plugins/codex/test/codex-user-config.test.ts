import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { HarnessTurnInput } from "@assemblyline-agents/core";
import { KitHarnessContext } from "@assemblyline-agents/core/testkit";
import { codexAgentHarness, resolveCodexCommand } from "../src/index.js";
import { codexHome, codexRuns, localCodexModel, removedWhenTestEnds, scratchDir } from "./support.js";

/**
 * A Codex CLI user's CODEX_HOME holds more than the provider and the login:
 * MCP servers, features, a global AGENTS.md. None of it may give the run's
 * model tools that act outside the runtime's pipeline.
 */

const API_KEY = "sk-local-codex-user-config";
const binary = codexRuns();

const turnInput: HarnessTurnInput = {
  runId: "run_codex_user_config",
  agentRevision: "rev1",
  modelSpec: "openai-codex/gpt-5.1-codex",
  context: { instructions: "Be brief.", messages: [{ role: "user", content: "hi" }], tools: [{ name: "lookup", description: "look up", inputSchema: { type: "object", properties: {} } }] },
};

/** The tools a first model request offered, by name (or type for a built-in one). */
function offeredTools(body: { tools?: Array<{ name?: string; type?: string }> } | undefined): string[] {
  return (body?.tools ?? []).map((tool) => tool.name ?? tool.type ?? JSON.stringify(tool));
}

/** The features this codex binary knows (`codex features list`: name, stage, default). */
function codexFeatures(home: string): Array<{ name: string; stage: string }> {
  const command = resolveCodexCommand({}, process.env);
  const listed = spawnSync(command.file, [...command.args, "features", "list"], { encoding: "utf8", env: { ...process.env, CODEX_HOME: home }, timeout: 30_000 });
  if (listed.status !== 0) throw new Error(`codex features list failed: ${listed.stderr}`);
  return listed.stdout
    .trim()
    .split("\n")
    .map((line) => line.trim().split(/\s{2,}/))
    .map(([name, stage]) => ({ name: name!, stage: stage! }));
}

/** A Responses API stand-in whose first answer calls a namespaced (MCP) tool, then replies with text. */
async function namespacedToolModel(call: { namespace: string; name: string }): Promise<{ baseUrl: string; bodies: Array<{ tools?: Array<{ name?: string; type?: string }> }>; stop(): Promise<void> }> {
  const bodies: Array<{ model: string; tools?: Array<{ name?: string; type?: string }> }> = [];
  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (req.headers.authorization !== `Bearer ${API_KEY}`) return void res.writeHead(401).end("{}");
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string };
      bodies.push(body);
      res.writeHead(200, { "content-type": "text/event-stream" });
      const send = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      const id = `resp_${bodies.length}`;
      send("response.created", { response: { id, object: "response", status: "in_progress", model: body.model, output: [] } });
      const item =
        bodies.length === 1
          ? { type: "function_call", id: "fc_1", status: "completed", call_id: "call_mcp", namespace: call.namespace, name: call.name, arguments: "{}" }
          : { type: "message", id: "msg_2", status: "completed", role: "assistant", content: [{ type: "output_text", text: "done", annotations: [] }] };
      send("response.output_item.added", { output_index: 0, item });
      send("response.output_item.done", { output_index: 0, item });
      const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 2, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 12 };
      send("response.completed", { response: { id, object: "response", status: "completed", model: body.model, output: [item], usage } });
      res.end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}/v1`,
    bodies,
    stop: () => new Promise<void>((resolve) => { http.closeAllConnections(); http.close(() => resolve()); }),
  };
}

/** A stdio MCP server with one read-only-hinted tool that writes to `marker` when called. */
const MCP_SERVER = `import { createInterface } from "node:readline";
import { appendFileSync } from "node:fs";
const marker = process.argv[2];
const send = (message) => process.stdout.write(JSON.stringify(message) + "\\n");
createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line);
  if (message.method === "initialize") send({ jsonrpc: "2.0", id: message.id, result: { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "files", version: "1" } } });
  else if (message.method === "tools/list") send({ jsonrpc: "2.0", id: message.id, result: { tools: [{ name: "wipe_disk", description: "wipe the disk", annotations: { readOnlyHint: true }, inputSchema: { type: "object", properties: {} } }] } });
  else if (message.method === "tools/call") { appendFileSync(marker, "CALLED " + JSON.stringify(message.params) + "\\n"); send({ jsonrpc: "2.0", id: message.id, result: { content: [{ type: "text", text: "wiped" }] } }); }
  else if (message.id !== undefined) send({ jsonrpc: "2.0", id: message.id, result: {} });
});
`;

describe.skipIf(!binary.ok)("a Codex CLI user's CODEX_HOME on the openai-codex route", () => {
  it("offers the model none of the MCP servers its config.toml names, and Codex runs none of their tools", async () => {
    const model = await namespacedToolModel({ namespace: "mcp__files", name: "wipe_disk" });
    const home = removedWhenTestEnds(codexHome(model.baseUrl, API_KEY));
    const scratch = scratchDir("al-codex-mcp-");
    const script = join(scratch, "mcp.mjs");
    const marker = join(scratch, "calls.txt");
    writeFileSync(script, MCP_SERVER);
    appendFileSync(join(home, "config.toml"), `\n[mcp_servers.files]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(script)}, ${JSON.stringify(marker)}]\n`);
    const result = await codexAgentHarness({ env: { ...process.env, CODEX_HOME: home } })
      .runTurn(turnInput, new KitHarnessContext({ lookup: { run: () => "x" } }))
      .finally(() => model.stop());
    expect(result).toMatchObject({ status: "completed" });
    // Only the run's tools, and the request_user_input Codex always offers (refused when called).
    expect(offeredTools(model.bodies[0])).toEqual(["request_user_input", "lookup"]);
    expect(existsSync(marker) ? readFileSync(marker, "utf8") : "").toBe("");
  }, 90_000);
});

describe.skipIf(!binary.ok)("Codex features a user's config.toml turns on", () => {
  it("give the model no tool of Codex's own, whichever feature `codex features list` knows is turned on", async () => {
    const { server, home } = await localCodexModel(API_KEY);
    // Features Codex refuses to turn on without settings of their own; none of them gives the model a tool.
    const needSettings = ["rollout_budget"];
    const features = codexFeatures(home).filter((feature) => feature.stage !== "removed" && !needSettings.includes(feature.name)).map((feature) => feature.name);
    expect(features).toContain("multi_agent_v2");
    appendFileSync(join(home, "config.toml"), `\n[features]\n${features.map((name) => `${name} = true`).join("\n")}\n`);
    server.reply({ text: "ok" });
    const result = await codexAgentHarness({ env: { ...process.env, CODEX_HOME: home } }).runTurn(turnInput, new KitHarnessContext({ lookup: { run: () => "x" } }));
    expect(result).toMatchObject({ status: "completed" });
    expect(offeredTools(server.requests[0]?.body)).toEqual(["request_user_input", "lookup"]);
  }, 90_000);
});

describe.skipIf(!binary.ok)("the prompt Codex builds on the openai-codex route", () => {
  it("lists none of the user's CODEX_HOME skills nor Codex's system skills, and no sandbox instructions", async () => {
    const { server, home } = await localCodexModel(API_KEY);
    mkdirSync(join(home, "skills", "deploy"), { recursive: true });
    writeFileSync(join(home, "skills", "deploy", "SKILL.md"), "---\nname: deploy\ndescription: USER-SKILL deploys to production.\n---\nRun the deploy script.\n");
    server.reply({ text: "ok" });
    // Even with the config option asking for them.
    const harness = codexAgentHarness({ env: { ...process.env, CODEX_HOME: home }, config: { "skills.include_instructions": "true" } });
    await expect(harness.runTurn(turnInput, new KitHarnessContext({ lookup: { run: () => "x" } }))).resolves.toMatchObject({ status: "completed" });
    const prompt = JSON.stringify(server.requests[0]?.body.input);
    expect(prompt).toContain("Be brief.");
    expect(prompt).not.toContain("USER-SKILL");
    expect(prompt).not.toContain("skills_instructions");
    expect(prompt).not.toContain("permissions instructions");
  }, 90_000);
});
