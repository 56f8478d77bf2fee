import { describe, expect, it } from "vitest";
import { buildAgent } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

const buildError = async (files: Record<string, string>) =>
  buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, ...files })).then(
    () => {
      throw new Error("expected the build to fail");
    },
    (error: Error & { code?: string }) => error,
  );

const fixOf = (error: Error) => error.message.split("\n  fix: ")[1] ?? "";

describe("tools/ files the build refuses", () => {
  it("refuses a tool name longer than the 64 characters model APIs take", async () => {
    const long = "a".repeat(65);
    const error = await buildError({ [`tools/${long}.ts`]: toolSource() });
    expect(error.code).toBe("AL_ERR_TOOL_NAME");
    expect(error.message).toContain(`tools/${long}.ts: tool name "${long}" is 65 characters`);
    expect(fixOf(error)).toMatch(/at most 64/);
  });

  it("builds a tool name of exactly 64 characters", async () => {
    const name = "a".repeat(64);
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, [`tools/${name}.ts`]: toolSource() });
    expect((await buildAgent(dir)).manifest.tools.map((tool) => tool.name)).toEqual([name]);
  });

  it.each([
    ["recordNote", "tools/record_note.ts"],
    ["my tool", "tools/my_tool.ts"],
    ["résumé", "tools/resume.ts"],
    ["_helpers", "tools/helpers.ts"],
  ])("suggests a valid name for tools/%s.ts", async (stem, suggestion) => {
    const error = await buildError({ [`tools/${stem}.ts`]: toolSource() });
    expect(error.code).toBe("AL_ERR_TOOL_NAME");
    expect(fixOf(error)).toContain(`Rename the file to ${suggestion}`);
  });

  it("never suggests the name it refuses: a leading digit gets the rule", async () => {
    const error = await buildError({ "tools/1st_step.ts": toolSource() });
    expect(error.code).toBe("AL_ERR_TOOL_NAME");
    expect(fixOf(error)).not.toContain("tools/1st_step.ts");
    expect(fixOf(error)).toMatch(/starting with a letter/);
  });

  it("says why a double underscore is refused: it names connection tools", async () => {
    const error = await buildError({ "tools/billing__refund.ts": toolSource() });
    expect(error.code).toBe("AL_ERR_TOOL_NAME");
    expect(error.message).toMatch(/double underscore.*<connection>__<tool>/);
    expect(fixOf(error)).toContain("tools/billing_refund.ts");
  });

  it.each([
    ["a string schema", `{ type: "string" }`],
    ["an array schema", `{ type: "array", items: { type: "string" } }`],
    ["an empty schema", `{}`],
    ["true", `true`],
    ["properties without a type", `{ properties: { value: { type: "string" } } }`],
  ])("refuses %s as inputSchema: model APIs take an object of arguments", async (_what, schema) => {
    const error = await buildError({ "tools/lookup.ts": toolSource({ schema }) });
    expect(error.code).toBe("AL_ERR_TOOL_SCHEMA");
    expect(error.message).toMatch(/tools\/lookup\.ts: inputSchema must be an object schema \(type: "object"\)/);
    expect(fixOf(error)).toMatch(/type: "object", properties/);
  });

  it("refuses a schema that is not JSON data, which the manifest could not record as it runs", async () => {
    const error = await buildError({ "tools/lookup.ts": toolSource({ schema: `{ type: "object", properties: { value: { type: "string", default: () => "x" } } }` }) });
    expect(error.code).toBe("AL_ERR_TOOL_SCHEMA");
    expect(error.message).toMatch(/tools\/lookup\.ts: inputSchema\.properties\.value\.default is a function/);
  });

  it("refuses a format the runtime does not check, naming the tool, the format and the formats it checks", async () => {
    const error = await buildError({ "tools/notify.ts": toolSource({ schema: `{ type: "object", properties: { email: { type: "string", format: "emial" } } }` }) });
    expect(error.code).toBe("AL_ERR_TOOL_SCHEMA");
    expect(error.message).toMatch(/tools\/notify\.ts: inputSchema .*unknown format "emial" at #\/properties\/email/);
    expect(error.message).toMatch(/Use one of the formats the runtime checks \(date, .*email.*uuid.*\), or drop "format"/);
    expect(fixOf(error)).toContain('tool "notify"');
  });

  it("builds schemas with the formats the runtime checks", async () => {
    const schema = `{ type: "object", properties: { at: { type: "string", format: "date-time" }, id: { type: "string", format: "uuid" }, site: { type: "string", format: "uri" }, n: { type: "integer", format: "int32" } } }`;
    await expect(buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/lookup.ts": toolSource({ schema }) }))).resolves.toBeDefined();
  });

  it("refuses a tool file that exports a second tool, which would never be offered", async () => {
    const second = `export const refund = defineTool({ description: "Refund.", inputSchema: { type: "object" }, async execute() { return {}; } });\n`;
    const error = await buildError({ "tools/charge.ts": toolSource() + second });
    expect(error.code).toBe("AL_ERR_TOOL_DEFINITION");
    expect(error.message).toMatch(/tools\/charge\.ts also exports a tool as "refund"/);
    expect(fixOf(error)).toMatch(/tools\/refund\.ts/);
  });

  it("says a tool exported by name must be the default export", async () => {
    const error = await buildError({ "tools/charge.ts": toolSource().replace("export default", "export const charge =") });
    expect(error.code).toBe("AL_ERR_TOOL_DEFINITION");
    expect(error.message).toMatch(/tools\/charge\.ts does not default-export defineTool/);
    expect(fixOf(error)).toMatch(/export default charge/);
  });

  it("refuses a tool whose execute is not a function, at build rather than at its first call", async () => {
    const error = await buildError({
      "tools/echo.ts": `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({ description: "Echo.", inputSchema: { type: "object", properties: {} }, execute: { run() { return {}; } } } as never);
`,
    });
    expect(error.code).toBe("AL_ERR_TOOL_DEFINITION");
    expect(error.message).toMatch(/^AL_ERR_TOOL_DEFINITION: tools\/echo\.ts: execute must be a function \(input, ctx\) => result, not an object/);
    expect(fixOf(error)).toMatch(/async execute\(input, ctx\)/);
  });

  it("refuses a tool whose toModelOutput is given but is not a function, which the runtime would call", async () => {
    const error = await buildError({ "tools/echo.ts": toolSource({ extra: `toModelOutput: "summary",` }) });
    expect(error.code).toBe("AL_ERR_TOOL_DEFINITION");
    expect(error.message).toContain('tools/echo.ts: toModelOutput must be a function (output) => projection, not the string "summary"');
  });

  it("refuses an async toModelOutput, whose Promise would fail every call of the tool", async () => {
    const error = await buildError({ "tools/echo.ts": toolSource({ extra: `async toModelOutput(output) { return { shown: output.echoed }; },` }) });
    expect(error.code).toBe("AL_ERR_TOOL_DEFINITION");
    expect(error.message).toContain("tools/echo.ts: toModelOutput must be synchronous: it is an async function");
    expect(fixOf(error)).toContain("synchronous `toModelOutput(output) { return ...; }` (no async)");
  });

  it("builds a tool whose toModelOutput is a function, and records that it has one", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource({ extra: `toModelOutput(output) { return { shown: output.echoed }; },` }) });
    expect((await buildAgent(dir)).manifest.tools[0]).toMatchObject({ name: "echo", hasToModelOutput: true });
  });

  it("builds a tool file with helper exports beside its tool", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/charge.ts": toolSource() + `export const LIMIT = 5;\nexport function helper() { return 1; }\n` });
    expect((await buildAgent(dir)).manifest.tools.map((tool) => tool.name)).toEqual(["charge"]);
  });
});
