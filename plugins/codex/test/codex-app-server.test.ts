import { appendFileSync, chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { HarnessTurnInput, RuntimeLogger } from "@assemblyline-agents/core";
import { KitHarnessContext } from "@assemblyline-agents/core/testkit";
import { codexAgentHarness } from "../src/index.js";
import { codexRuns, localCodexModel, scratchDir } from "./support.js";

const API_KEY = "sk-local-codex-app-server-test";
const binary = codexRuns();

const turnInput: HarnessTurnInput = {
  runId: "run_codex_app_server",
  agentRevision: "rev1",
  modelSpec: "openai-codex/gpt-5.1-codex",
  context: { instructions: "Be brief.", messages: [{ role: "user", content: "hi" }], tools: [] },
};

describe("the app-server's stdout", () => {
  it("skips a line that is JSON but not a message (null, a number, an array) instead of crashing the host with a TypeError", async () => {
    // A codex binary (the `command` option) that writes such lines, then exits.
    const dir = scratchDir("al-codex-fake-");
    const fake = join(dir, "codex");
    writeFileSync(fake, "#!/bin/sh\necho null\necho 42\necho '[]'\nsleep 1\n");
    chmodSync(fake, 0o755);
    const skipped: string[] = [];
    class LoggedContext extends KitHarnessContext {
      override readonly logger: RuntimeLogger = { debug: (fields) => void skipped.push(String(fields.line)), info: () => undefined, warn: () => undefined, error: () => undefined };
    }
    const uncaught: unknown[] = [];
    const listeners = process.listeners("uncaughtException");
    process.removeAllListeners("uncaughtException");
    const onUncaught = (error: unknown) => void uncaught.push(error);
    process.on("uncaughtException", onUncaught);
    try {
      const failure = await codexAgentHarness({ command: fake, env: { ...process.env } }).runTurn(turnInput, new LoggedContext({})).catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: "AL_ERR_CODEX_APP_SERVER" });
    } finally {
      process.off("uncaughtException", onUncaught);
      for (const listener of listeners) process.on("uncaughtException", listener);
    }
    expect(uncaught.map(String)).toEqual([]);
    expect(skipped).toEqual(expect.arrayContaining(["null", "42", "[]"]));
  }, 30_000);
});

describe.skipIf(!binary.ok)(`an app-server that exits at startup (${binary.why})`, () => {
  it("fails the run with Codex's own error, without its backtrace frames or a key the config value holds", async () => {
    const { server, home } = await localCodexModel(API_KEY);
    // Not a number: Codex refuses the config and quotes the value, here shaped like a key.
    const harness = codexAgentHarness({ env: { ...process.env, CODEX_HOME: home }, config: { "model_providers.local.request_max_retries": '"sk-pasted-into-the-wrong-key"' } });
    const failure = await harness.runTurn(turnInput, new KitHarnessContext({})).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "AL_ERR_CODEX_APP_SERVER" });
    const message = (failure as Error).message;
    expect(message).toMatch(/Error: invalid type: .*expected u64 \| in `model_providers\.local\.request_max_retries`/);
    expect(message).not.toMatch(/backtrace|<unknown>/i);
    expect(message).not.toContain("sk-pasted-into-the-wrong-key");
    expect(server.requests).toHaveLength(0);
  }, 60_000);

  it("fails the run on a CODEX_HOME/config.toml Codex cannot read, naming the key and redacting the value, instead of running on Codex's defaults (another provider)", async () => {
    const { server, home } = await localCodexModel(API_KEY);
    // Codex warns "Invalid configuration; using defaults." (configWarning) and refuses config/read.
    appendFileSync(join(home, "config.toml"), 'stream_max_retries = "sk-pasted-into-the-wrong-key"\n');
    server.reply({ text: "hello" });
    const failure = await codexAgentHarness({ env: { ...process.env, CODEX_HOME: home } }).runTurn(turnInput, new KitHarnessContext({})).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "AL_ERR_CODEX_APP_SERVER", message: expect.stringMatching(/refused config\/read: invalid configuration: [\s\S]*stream_max_retries/) });
    // Codex quotes the value it refused: redacted, as the provider's errors are.
    expect((failure as Error).message).not.toContain("sk-pasted-into-the-wrong-key");
    expect(server.requests).toHaveLength(0);
  }, 60_000);
});
