import { describe, expect, it } from "vitest";
import { defineHttpConnection, type ConnectionProvider } from "@assemblyline-agents/core";
import { agentFolder, MINIMAL_AGENT } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

const WEATHER_FILE = `import { defineHttpConnection } from "@assemblyline-agents/core";
export default defineHttpConnection({ description: "The folder's weather.", baseUrl: "https://folder-weather.example.com", endpoints: { today: { method: "GET", path: "/today", description: "Today" } } });
`;

/** A provider declaring `weather` itself, as createConnections({ connections: { weather } }) does. */
const hostWithWeather: ConnectionProvider = {
  connections: { weather: defineHttpConnection({ description: "The host's weather.", baseUrl: "https://host-weather.example.com", endpoints: { today: { method: "GET", path: "/today", description: "Today" } } }) },
  describe: async () => ({}),
  tools: () => ({}),
};

describe("a connection the agent folder and the host both declare", () => {
  it("is refused when the runtime starts, naming the folder file and the host option, instead of the host's silently replacing the folder's", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "connections/weather.ts": WEATHER_FILE });
    const started = await startAgent(dir, [{ text: "done" }], { connections: hostWithWeather }).catch((error: unknown) => error);
    expect(started).toMatchObject({
      code: "AL_ERR_CONNECTION_DEFINITION",
      message: expect.stringContaining('connection "weather" is declared twice: by the agent folder (connections/weather.ts) and by the host (createConnections({ connections: { weather } }))'),
      fix: expect.stringContaining("Rename one of them"),
    });
  });

  it("starts when the names differ", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "connections/forecast.ts": WEATHER_FILE });
    const { runtime } = await startAgent(dir, [{ text: "done" }], { connections: hostWithWeather });
    expect((await runtime.run({ message: "hi" })).status).toBe("completed");
  });
});
