import { describe, expect, it } from "vitest";
import { buildAgent } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

const buildError = async (files: Record<string, string>) =>
  buildAgent(agentFolder(files)).then(
    () => {
      throw new Error("expected the build to fail");
    },
    (error: Error & { code?: string }) => error,
  );

const subagent = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "Researches." });\n`;

describe("an agent folder the compiler cannot build as it is", () => {
  it.each([
    ["tools/", { "tools/echo.ts": toolSource(), "tools/echo.js": toolSource() }, /tools\/echo\.js and tools\/echo\.ts are both the tool "echo"/],
    ["tools/ (.mts)", { "tools/echo.ts": toolSource(), "tools/echo.mts": toolSource() }, /tools\/echo\.mts and tools\/echo\.ts are both the tool "echo"/],
    ["channels/", { "channels/hook.ts": "export default 1;", "channels/hook.mjs": "export default 1;" }, /channels\/hook\.mjs and channels\/hook\.ts are both the channel "hook"/],
    ["a subagent's tools/", { "subagents/res/agent.ts": subagent, "subagents/res/tools/find.ts": toolSource(), "subagents/res/tools/find.js": toolSource() }, /subagents\/res\/tools\/find\.js and subagents\/res\/tools\/find\.ts are both the tool "find"/],
  ])("refuses two files of one name in %s instead of building both", async (_where, files, message) => {
    const error = await buildError({ "agent.ts": MINIMAL_AGENT, ...files });
    expect(error.code).toBe("AL_ERR_AGENT_FOLDER");
    expect(error.message).toMatch(message);
    expect(error.message).toMatch(/fix: Keep one of them/);
  });

  it("refuses agent.ts beside agent.js instead of building one of them", async () => {
    const error = await buildError({ "agent.ts": MINIMAL_AGENT, "agent.js": MINIMAL_AGENT });
    expect(error.code).toBe("AL_ERR_AGENT_FOLDER");
    expect(error.message).toMatch(/agent\.js and agent\.ts are both the agent definition/);
  });

  it("refuses a gateway.ts key that is no slot, naming it and what it likely meant, instead of leaving that part on its default", async () => {
    const gateway = `import { adapter, defineGateway } from "@assemblyline-agents/core";\nexport default defineGateway({ state: adapter("local"), blobs: adapter("local"), telemetry: adapter("otlp") });\n`;
    const error = await buildError({ "agent.ts": MINIMAL_AGENT, "gateway.ts": gateway });
    expect(error.code).toBe("AL_ERR_GATEWAY_DEFINITION");
    expect(error.message).toMatch(/gateway\.ts: defineGateway: "blobs", "telemetry" are not slots/);
    expect(error.message).toMatch(/Blob storage is the blob slot\. Telemetry is set up in instrumentation\.ts/);
  });

  it("refuses gateway.ts beside gateway.mjs", async () => {
    const error = await buildError({ "agent.ts": MINIMAL_AGENT, "gateway.ts": "export default 1;", "gateway.mjs": "export default 1;" });
    expect(error.code).toBe("AL_ERR_AGENT_FOLDER");
    expect(error.message).toMatch(/gateway\.mjs and gateway\.ts/);
  });

  it.each([
    ["tools/echo.cts", "tools/echo.cts"],
    ["tools/echo.tsx", "tools/echo.tsx"],
    ["hooks/audit.cjs", "hooks/audit.cjs"],
    ["subagents/res/tools/find.cts", "subagents/res/tools/find.cts"],
  ])("refuses %s, a code file the compiler would skip, instead of leaving it out without a word", async (file, shown) => {
    const error = await buildError({ "agent.ts": MINIMAL_AGENT, "subagents/res/agent.ts": subagent, [file]: toolSource() });
    expect(error.code).toBe("AL_ERR_AGENT_FOLDER");
    expect(error.message).toContain(`${shown} is not loaded`);
    expect(error.message).toMatch(/fix: Rename it to .*\.ts/);
  });

  const hook = `import { defineHook } from "@assemblyline-agents/core";\nexport default defineHook({ events: { "run.completed"() {} } });\n`;
  it.each([
    ["a tool", { "tools/billing/create_invoice.ts": toolSource() }, "tools/billing/create_invoice.ts default-exports a tool, but only files directly in tools/ are compiled", "Move it to tools/create_invoice.ts"],
    ["a tool exported by another name", { "tools/billing/refund.ts": toolSource().replace("export default defineTool(", "const refund = defineTool(") + "export { refund as default };\n" }, "tools/billing/refund.ts default-exports a tool", "Move it to tools/refund.ts"],
    ["disableTool()", { "tools/legacy/bash.ts": `import { disableTool } from "@assemblyline-agents/core";\nexport default disableTool();\n` }, "tools/legacy/bash.ts default-exports a tool", "Move it to tools/bash.ts"],
    ["a hook", { "hooks/audit/record.ts": hook }, "hooks/audit/record.ts default-exports a hook, but only files directly in hooks/ are compiled: the hook would never run", "Move it to hooks/record.ts"],
    ["an automation", { "automations/reports/daily.ts": `import { defineAutomation } from "@assemblyline-agents/core";\nexport default defineAutomation({ schedule: "0 9 * * *", message: "Report." });\n` }, "automations/reports/daily.ts default-exports an automation", "Move it to automations/daily.ts"],
    ["a subagent's tool", { "subagents/res/tools/archive/find.ts": toolSource() }, "subagents/res/tools/archive/find.ts default-exports a tool, but only files directly in subagents/res/tools/ are compiled", "Move it to subagents/res/tools/find.ts"],
  ])("refuses %s in a subfolder, which the compiler would skip without a word", async (_what, files, message, fix) => {
    const error = await buildError({ "agent.ts": MINIMAL_AGENT, "subagents/res/agent.ts": subagent, ...files });
    expect(error.code).toBe("AL_ERR_AGENT_FOLDER");
    expect(error.message).toContain(message);
    expect(error.message).toContain(`fix: ${fix}`);
  });

  it("builds helper modules in part subfolders: imported ones whatever they export, and others it never runs unless they have a default export", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/billing/client.ts": `export const currency = "EUR";\n`,
      // The base a top-level tool wraps: imported, so a helper though it default-exports a tool.
      "tools/billing/base.ts": toolSource(),
      "tools/charge.ts": `import { defineTool } from "@assemblyline-agents/core";\nimport base from "./billing/base";\nimport { currency } from "./billing/client";\nexport default defineTool({ ...base, description: "Charge in " + currency + "." });\n`,
      // Imported by nothing and without a default export: not loaded, so its throw never runs.
      "tools/billing/seed.ts": `throw new Error("a script, not to be run at build");\nexport const seeded = true;\n`,
      "tools/billing/unused.ts": `export default { rate: 0.2 };\n`,
      "hooks/shared/format.ts": `export default function format(value: unknown) { return String(value); }\n`,
    });
    const { manifest } = await buildAgent(dir);
    expect(manifest.tools.map((tool) => tool.name)).toEqual(["charge"]);
    expect(manifest.hooks).toEqual([]);
  });

  it("builds a folder whose tools/ also holds notes, data and type declarations", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource(), "tools/README.md": "notes", "tools/data.json": "{}", "tools/types.d.ts": "export type X = 1;\n" });
    expect((await buildAgent(dir)).manifest.tools.map((tool) => tool.name)).toEqual(["echo"]);
  });

  it.each([
    ["does not default-export a tool", { "subagents/res/tools/bad.ts": "export default 1;\n" }, "AL_ERR_TOOL_DEFINITION", /subagents\/res\/tools\/bad\.ts does not default-export defineTool/],
    ["is not snake_case", { "subagents/res/tools/Bad.ts": toolSource() }, "AL_ERR_TOOL_NAME", /subagents\/res\/tools\/Bad\.ts: tool name "Bad"/],
    ["throws while loading", { "subagents/res/tools/boom.ts": `throw new Error("kaboom");\n` }, "AL_ERR_SOURCE_LOAD", /^AL_ERR_SOURCE_LOAD: subagents\/res\/tools\/boom\.ts threw while loading: kaboom/],
  ])("names a subagent's tool file from the agent folder when it %s", async (_what, files, code, message) => {
    const error = await buildError({ "agent.ts": MINIMAL_AGENT, "subagents/res/agent.ts": subagent, ...files });
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
  });

  it("names agent.ts and the line of a syntax error in it", async () => {
    const error = await buildError({ "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({\n  model: "m/x",\n  instructions: "x" +,\n});\n` });
    expect(error.code).toBe("AL_ERR_SOURCE_LOAD");
    expect(error.message).toMatch(/^AL_ERR_SOURCE_LOAD: agent\.ts threw while loading/);
    expect(error.message).toMatch(/agent\.ts:4:/);
  });
});
