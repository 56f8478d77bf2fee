import { describeHarnessConformance, type HarnessKitReply } from "@assemblyline-agents/core/testkit";
import { describe } from "vitest";
import { piAgentHarness } from "../src/index.js";
import type { ScriptedReply } from "./servers/index.js";
import { anthropicMessages, openAIChat, type ProtocolCase } from "./support/protocols.js";

/** The kit's protocol-neutral reply as the fake provider's script: text in two deltas, tool arguments in two chunks. */
function scripted(reply: HarnessKitReply): ScriptedReply {
  if ("text" in reply) {
    const cut = Math.ceil(reply.text.length / 2);
    return { kind: "stream", text: [reply.text.slice(0, cut), reply.text.slice(cut)] };
  }
  if ("toolCall" in reply) {
    const args = JSON.stringify(reply.toolCall.input);
    return { kind: "stream", toolCalls: [{ id: reply.toolCall.id, name: reply.toolCall.name, argumentChunks: [args.slice(0, 3), args.slice(3)] }] };
  }
  return { kind: "stream", text: ["never finished"], holdAfter: { events: 0, until: new Promise<void>(() => undefined) } };
}

describe.each([openAIChat, anthropicMessages])("pi against $name", (protocol: ProtocolCase) => {
  describeHarnessConformance(`pi (${protocol.name})`, async () => {
    const server = await protocol.start();
    const saved = Object.fromEntries([protocol.keyVariable, ...protocol.otherKeyVariables].map((name) => [name, process.env[name]]));
    for (const name of protocol.otherKeyVariables) delete process.env[name];
    process.env[protocol.keyVariable] = protocol.apiKey;
    return {
      state: {
        harness: piAgentHarness({ models: protocol.models(server.baseUrl), retry: { initialDelayMs: 5, maxDelayMs: 50 } }),
        modelSpec: protocol.spec,
        reply: (...replies) => void server.enqueue(...replies.map(scripted)),
        requests: () => server.requests.map((request) => JSON.stringify(request.body)),
      },
      cleanup: async () => {
        await server.close();
        for (const [name, value] of Object.entries(saved)) {
          if (value === undefined) delete process.env[name];
          else process.env[name] = value;
        }
      },
    };
  });
});
