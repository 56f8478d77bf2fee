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

describe("channel named exports at build", () => {
  const withExport = (extra: string) =>
    `import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: "/hook", methods: ["POST"] });\n${extra}\n`;

  async function refusal(extra: string): Promise<{ code: string; message: string; fix: string | undefined }> {
    const error = await buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "channels/hook.ts": withExport(extra) })).then(
      () => undefined,
      (thrown: unknown) => thrown as AssemblyLineError,
    );
    if (!error) throw new Error("the build passed");
    return { code: error.code, message: errorSummary(error), fix: error.fix };
  }

  it.each([
    // A British spelling would build a raw route: open in dev mode, the channel's signature check never run.
    ["normaliseHttp", "export function normaliseHttp(request) { return { ack: true }; }", "normalizeHttp"],
    // The replies would never be pushed to the provider.
    ["deliverReply", "export async function deliverReply(delivery) {}", "deliver"],
    ["deliverFailed", "export async function deliverFailed(failure) {}", "deliverFailure"],
    ["resolveAttachments", "export const resolveAttachments = () => undefined;", "resolveAttachment"],
  ])("refuses an export %s the host never reads, naming the closest channel member", async (exported, extra, closest) => {
    const refused = await refusal(extra);
    expect(refused).toMatchObject({ code: "AL_ERR_CHANNEL_DEFINITION", message: expect.stringContaining(`channels/hook.ts: export ${exported} is not one a channel module has`) });
    expect(refused.fix).toContain(`Rename it to ${closest} if that is what it is`);
  });

  it("refuses a channel member exported as something other than a function", async () => {
    expect(await refusal('export const deliver = "https://provider.example/reply";')).toMatchObject({ code: "AL_ERR_CHANNEL_DEFINITION", message: "channels/hook.ts: export deliver is not a function" });
  });

  it("builds a channel exporting every member a channel module has", async () => {
    const { manifest } = await buildAgent(
      agentFolder({
        "agent.ts": MINIMAL_AGENT,
        "channels/hook.ts": withExport(
          "export function normalizeHttp() { return { ack: true }; }\nexport async function deliver() {}\nexport async function deliverFailure() {}\nexport function resolveAttachment() { return undefined; }\nexport type Unused = string;",
        ),
      }),
    );
    expect(manifest.channels[0]!.exports).toEqual({ normalizeHttp: true, deliver: true, resolveAttachment: true, deliverFailure: true });
  });
});
