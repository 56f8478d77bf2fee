import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { InMemoryStateAdapter, buildAgent, loadRuntimeBundle } from "@assemblyline-agents/runtime";
import { startOpenAIChatServer } from "@assemblyline-agents/pi/testkit";
import { listenNodeRuntime, noopLogger } from "../src/index.js";

const SPEC = "openai/gpt-4o-mini";

function agentFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), "al-node-pi-env-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const files = {
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "${SPEC}", instructions: "Test." });\n`,
    "channels/message.ts": 'import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: "/message", methods: ["POST"] });\n',
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

describe("the Node host's env option and the Pi engine", () => {
  it("gives the Pi engine the API key set only in the host's env", async () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    onTestFinished(() => {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    });
    const server = await startOpenAIChatServer({ apiKey: "sk-host-env-only" });
    onTestFinished(() => server.close());
    server.text(["Hello from the model."]);
    const { artifactRoot } = await buildAgent(agentFolder());
    const host = await listenNodeRuntime({
      ...(await loadRuntimeBundle(artifactRoot)),
      models: { [SPEC]: { api: "openai-completions", baseUrl: server.baseUrl } },
      state: new InMemoryStateAdapter(),
      port: 0,
      host: "127.0.0.1",
      devMode: true,
      logger: noopLogger(),
      env: { OPENAI_API_KEY: "sk-host-env-only" },
    });
    onTestFinished(() => host.shutdown({ timeoutMs: 2_000 }));

    const response = await fetch(`${host.url}/message?wait=30`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ message: "hello" }) });
    const body = (await response.json()) as Record<string, unknown>;

    expect(JSON.stringify(body)).not.toContain("AL_ERR_MODEL_API_KEY");
    expect(body.status).toBe("completed");
    expect(JSON.stringify(body)).toContain("Hello from the model.");
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(["Bearer sk-host-env-only"]);
  });
});
