import { describe, expect, it } from "vitest";
import { AssemblyLineError, errorSummary } from "@assemblyline-agents/core";
import { buildAgent } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";

const channel = (route: string) =>
  `import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: ${JSON.stringify(route)}, methods: ["POST"] });\nexport function normalizeHttp() { return { ack: true }; }`;

async function buildFailure(files: Record<string, string>): Promise<{ code: string; message: string }> {
  const error = await buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, ...files })).then(
    () => undefined,
    (thrown: unknown) => thrown as AssemblyLineError,
  );
  if (!error) throw new Error("the build passed");
  return { code: error.code, message: errorSummary(error) };
}

describe("channel routes at build", () => {
  it("refuses two channels whose routes differ only in their slashes, as the host routes them to one path", async () => {
    expect(await buildFailure({ "channels/message.ts": channel("/message"), "channels/twin.ts": channel("/message/") })).toEqual({
      code: "AL_ERR_CHANNEL_DEFINITION",
      message: "channels/twin.ts: route /message/ (routed as /message) is also served by channels/message.ts as /message",
    });
    expect(await buildFailure({ "channels/a.ts": channel("//hooks//in/"), "channels/b.ts": channel("/hooks/in") })).toEqual({
      code: "AL_ERR_CHANNEL_DEFINITION",
      message: "channels/b.ts: route /hooks/in is also served by channels/a.ts as //hooks//in/ (routed as /hooks/in)",
    });
    expect(await buildFailure({ "channels/a.ts": channel("/same"), "channels/b.ts": channel("/same") })).toEqual({
      code: "AL_ERR_CHANNEL_DEFINITION",
      message: "channels/b.ts: route /same is also served by channels/a.ts",
    });
  });

  it("builds channels on routes that are distinct paths, keeping each route as written", async () => {
    const { manifest } = await buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "channels/a.ts": channel("/message/"), "channels/b.ts": channel("/message/b") }));
    expect(manifest.channels.map((entry) => entry.route)).toEqual(["/message/", "/message/b"]);
  });
});

describe("channel methods at build", () => {
  const withMethods = (methods: string) =>
    `import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: "/message", methods: ${methods} });\nexport function normalizeHttp() { return { ack: true }; }`;

  it.each([
    ["one method not in a list", `"POST"`, 'methods "POST" is not a non-empty list of HTTP methods'],
    ["an empty list (a route no request reaches)", `[]`, "methods [] is not a non-empty list of HTTP methods"],
  ])("refuses %s, naming the fix", async (_label, methods, problem) => {
    expect(await buildFailure({ "channels/message.ts": withMethods(methods) })).toEqual({ code: "AL_ERR_CHANNEL_DEFINITION", message: `channels/message.ts: ${problem}` });
  });
});
