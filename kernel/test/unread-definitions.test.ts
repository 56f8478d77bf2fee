import { describe, expect, it } from "vitest";
import { buildAgent } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

const resolver = `import { defineRunResolver } from "@assemblyline-agents/core";
// A trial caller must not see billing tools.
export default defineRunResolver(async (ctx) => (ctx.metadata?.tier === "trial" ? { defaultTools: ["read"] } : null));
`;
const hook = `import { defineHook } from "@assemblyline-agents/core";
export default defineHook({ events: { "run.completed"() {} } });
`;
const channel = `import { defineChannel } from "@assemblyline-agents/core";
export default defineChannel({ transport: "http", route: "/message" });
`;

const buildError = (files: Record<string, string>) =>
  buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, ...files })).then(
    () => undefined,
    (error: Error & { code?: string; fix?: string }) => error,
  );

describe("a definition in a file the build never reads", () => {
  it.each([
    ["resolver.ts", "resolvers.ts", resolver],
    ["hook/audit.ts", "hooks/<name>.ts", hook],
    ["hooks.ts", "hooks/<name>.ts", hook],
    ["tool/echo.ts", "tools/<name>.ts", toolSource()],
    ["channel.ts", "channels/<name>.ts", channel],
  ])("is refused: %s, pointing at %s", async (file, place, source) => {
    const error = await buildError({ [file]: source });
    expect(error).toMatchObject({ code: "AL_ERR_AGENT_FOLDER", message: expect.stringContaining(`${file} default-exports`) });
    expect(error?.fix).toContain(`Move it to ${place}`);
  });

  it("is allowed where the build reads it, and as a helper a compiled part imports", async () => {
    const base = `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({ description: "Echo", inputSchema: { type: "object", properties: {} }, execute: async () => "ok" });
`;
    const wrapped = `import base from "../lib/base-tool";
export default { ...base, description: "Echo, wrapped" };
`;
    expect(await buildError({ "resolvers.ts": resolver, "hooks/audit.ts": hook, "lib/base-tool.ts": base, "tools/echo.ts": wrapped })).toBeUndefined();
  });

  it("is not run to find out: a script beside the agent is only read", async () => {
    const script = `throw new Error("a script ran at build");
export default function main() {}
`;
    expect(await buildError({ "scripts/seed.ts": script })).toBeUndefined();
  });
});
