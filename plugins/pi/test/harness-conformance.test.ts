import { describeHarnessConformance } from "@assemblyline-agents/core/testkit";
import { describe } from "vitest";
import { piAgentHarness } from "../src/index.js";
import { piHarnessKitSubject, scriptedReplyOf } from "../src/testkit/index.js";
import { anthropicMessages, openAIChat, type ProtocolCase } from "./support/protocols.js";

// What `plugins verify` runs: OpenAI chat completions, the key passed in.
describeHarnessConformance("pi (the shipped kit subject)", piHarnessKitSubject);

describe.each([openAIChat, anthropicMessages])("pi against $name", (protocol: ProtocolCase) => {
  describeHarnessConformance(`pi (${protocol.name}, key from the environment)`, async () => {
    const server = await protocol.start();
    const saved = Object.fromEntries([protocol.keyVariable, ...protocol.otherKeyVariables].map((name) => [name, process.env[name]]));
    for (const name of protocol.otherKeyVariables) delete process.env[name];
    process.env[protocol.keyVariable] = protocol.apiKey;
    return {
      state: {
        harness: piAgentHarness({ models: protocol.models(server.baseUrl), retry: { initialDelayMs: 5, maxDelayMs: 50 } }),
        modelSpec: protocol.spec,
        reply: (...replies) => void server.enqueue(...replies.map(scriptedReplyOf)),
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
