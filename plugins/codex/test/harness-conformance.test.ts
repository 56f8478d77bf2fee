import { rmSync } from "node:fs";
import { describeHarnessConformance, type HarnessKitReply } from "@assemblyline-agents/core/testkit";
import { describe } from "vitest";
import { codexAgentHarness } from "../src/index.js";
import { ResponsesServer, type ScriptedResponse } from "./servers/responses-server.js";
import { codexHome, codexRuns } from "./support.js";

const API_KEY = "sk-local-codex-kit";
const binary = codexRuns();
if (!binary.ok) {
  if (process.env.CI === "true") throw new Error(`the codex binary must run in CI: ${binary.why}`);
  console.warn(`skipping the Codex harness kit: ${binary.why}`);
}

function scripted(reply: HarnessKitReply): ScriptedResponse {
  if ("text" in reply) return { text: reply.text };
  if ("toolCall" in reply) return { toolCalls: [{ callId: reply.toolCall.id, name: reply.toolCall.name, arguments: reply.toolCall.input }] };
  return { hang: true };
}

describe.skipIf(!binary.ok)(`the codex engine on the real app-server (${binary.why})`, () => {
  describeHarnessConformance("codex", async () => {
    const server = await new ResponsesServer(API_KEY).start();
    const home = codexHome(server.baseUrl, API_KEY);
    return {
      state: {
        harness: codexAgentHarness({ env: { ...process.env, CODEX_HOME: home } }),
        modelSpec: "openai-codex/gpt-5.1-codex",
        reply: (...replies) => void server.reply(...replies.map(scripted)),
        requests: () => server.requests.map((request) => JSON.stringify(request.body)),
      },
      cleanup: async () => {
        await server.stop();
        rmSync(home, { recursive: true, force: true });
      },
    };
  });
});
