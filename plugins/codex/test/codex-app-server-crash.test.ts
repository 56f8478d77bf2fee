import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import type { HarnessTurnInput, ModelToolCall, ToolCallOutcome } from "@assemblyline-agents/core";
import { KitHarnessContext } from "@assemblyline-agents/core/testkit";
import { codexAgentHarness } from "../src/index.js";
import { codexRuns, localCodexModel, scratchDir } from "./support.js";

const API_KEY = "sk-local-codex-crash";
const binary = codexRuns();

/** The native codex binary @openai/codex's launcher starts (the launcher is a node process with the binary as its child). */
function nativeCodex(): string | undefined {
  const require = createRequire(import.meta.url);
  try {
    const launcher = dirname(require.resolve("@openai/codex/package.json"));
    const platform = dirname(require.resolve(`@openai/codex-${process.platform}-${process.arch}/package.json`, { paths: [launcher] }));
    const vendor = join(platform, "vendor");
    return readdirSync(vendor).map((triple) => join(vendor, triple, "bin", "codex")).find((file) => existsSync(file));
  } catch {
    return undefined;
  }
}
const native = nativeCodex();
if (binary.ok && native === undefined && process.env.CI === "true") throw new Error("the native codex binary of @openai/codex's platform package must be found in CI (its crash tests kill it)");

/** A codex command that writes its pid, which stays the app-server's own (exec), so the test can kill it. */
function pidRecordingCommand(): { command: string; killAppServer(): void } {
  const dir = scratchDir("al-codex-crash-");
  const pidFile = join(dir, "pid");
  const command = join(dir, "codex");
  writeFileSync(command, `#!/bin/sh\necho $$ > '${pidFile}'\nexec '${native}' "$@"\n`);
  chmodSync(command, 0o755);
  return { command, killAppServer: () => process.kill(Number(readFileSync(pidFile, "utf8").trim()), "SIGKILL") };
}

const turnInput: HarnessTurnInput = {
  runId: "run_codex_crash",
  agentRevision: "rev1",
  modelSpec: "openai-codex/gpt-5.1-codex",
  context: { instructions: "Be brief.", messages: [{ role: "user", content: "go" }], tools: [{ name: "charge_card", description: "charge", inputSchema: { type: "object", properties: {} } }] },
};

describe.skipIf(!binary.ok || native === undefined)("an app-server that dies mid-turn", () => {
  it("fails the turn only once the tool call it was running has finished", async () => {
    const { server, home } = await localCodexModel(API_KEY);
    const { command, killAppServer } = pidRecordingCommand();
    server.reply({ toolCalls: [{ callId: "call_c", name: "charge_card", arguments: {} }] }, { text: "charged" });
    const log: string[] = [];
    class CrashingContext extends KitHarnessContext {
      override async callTool(call: ModelToolCall): Promise<ToolCallOutcome> {
        log.push("tool started");
        // The app-server dies (the OOM killer, a panic) while the tool charges the card.
        killAppServer();
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        log.push("tool finished");
        return super.callTool(call);
      }
    }
    const failure = await codexAgentHarness({ command, env: { ...process.env, CODEX_HOME: home } })
      .runTurn(turnInput, new CrashingContext({ charge_card: { run: () => "ok" } }))
      .catch((error: unknown) => error);
    log.push("turn failed");
    // The runtime records run.failed and releases the lease when the turn fails: not while the charge is under way.
    expect(log).toEqual(["tool started", "tool finished", "turn failed"]);
    expect(failure).toMatchObject({ code: "AL_ERR_CODEX_APP_SERVER" });
  }, 90_000);

  it("says how it exited (the signal) in the turn's error", async () => {
    const { server, home } = await localCodexModel(API_KEY);
    const { command, killAppServer } = pidRecordingCommand();
    server.reply({ hang: true });
    const turn = codexAgentHarness({ command, env: { ...process.env, CODEX_HOME: home } })
      .runTurn(turnInput, new KitHarnessContext({}))
      .catch((error: unknown) => error);
    const deadline = Date.now() + 30_000;
    while (server.requests.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    // Past turn/start's answer: the server is mid-turn, waiting on the model.
    await new Promise((resolve) => setTimeout(resolve, 500));
    killAppServer();
    const failure = await turn;
    expect(failure).toMatchObject({ code: "AL_ERR_CODEX_APP_SERVER" });
    expect((failure as Error).message).toMatch(/codex app-server exited during the turn \(SIGKILL\)/);
  }, 90_000);
});
