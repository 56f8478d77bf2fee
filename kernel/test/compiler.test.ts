import { cpSync, mkdtempSync, readFileSync, rmSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildAgent, loadRuntimeBundle } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource, writeFiles } from "./support/agent-folder.js";

const revisionOf = async (dir: string) => (await buildAgent(dir)).manifest.agentRevision;

describe("assembly-line build", () => {
  it("writes a manifest whose entries record their source file and content hash", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/record_note.ts": toolSource({ extra: "needsApproval: approvalRequired(\"Durable.\", \"idempotent\")," }) });
    const { manifest, manifestPath } = await buildAgent(dir);
    expect(JSON.parse(readFileSync(manifestPath, "utf8"))).toEqual(manifest);
    expect(manifestPath).toBe(join(dir, ".assembly-line", "manifest.json"));
    const tool = manifest.tools[0]!;
    expect(tool).toMatchObject({ name: "record_note", kind: "authored", needsApproval: { reason: "Durable.", sideEffect: "idempotent" } });
    expect(tool.source.file).toBe("tools/record_note.ts");
    expect(tool.source.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(manifest.agent.id).toBe(dir.split("/").at(-1));
  });

  it("gives the same folder the same revision, wherever it lives", async () => {
    const agent = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "fixed", model: "m/x" });\n`;
    const dir = agentFolder({ "agent.ts": agent, "tools/echo.ts": toolSource(), "notes.md": "docs" });
    const copy = mkdtempSync(join(tmpdir(), "al-copy-"));
    try {
      const first = await revisionOf(dir);
      expect(await revisionOf(dir)).toBe(first);
      cpSync(dir, join(copy, "elsewhere"), { recursive: true, filter: (source) => !source.includes(".assembly-line") });
      expect(await revisionOf(join(copy, "elsewhere"))).toBe(first);
      writeFiles(join(copy, "elsewhere"), { "tools/echo.ts": toolSource().replace(/\n/g, "\r\n") });
      expect(await revisionOf(join(copy, "elsewhere"))).toBe(first);
      writeFiles(dir, { "notes.md": "docs changed" });
      expect(await revisionOf(dir)).toBe(first);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it("gives the same revision after its files are touched, without its artifact cache, and to a copy that carries its .assembly-line", async () => {
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nimport data from "./data/table.json";\nexport default defineAgent({ id: "fixed", model: "m/x", instructions: "Rows: " + data.rows.length });\n`,
      "data/table.json": `{ "rows": [1, 2, 3] }`,
      "tools/echo.ts": toolSource(),
      "tools/add_note.ts": toolSource(),
      "hooks/audit.ts": `import { defineHook } from "@assemblyline-agents/core";\nexport default defineHook({ events: { "run.completed"() {}, "*"() {} } });\n`,
      "skills/notes/SKILL.md": "---\ndescription: Take notes.\ntools: [add_note]\n---\n1. Note.\n",
      "subagents/worker/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "Works." });\n`,
      "subagents/worker/tools/work.ts": toolSource(),
    });
    const copy = mkdtempSync(join(tmpdir(), "al-copy-"));
    try {
      const first = await revisionOf(dir);
      const later = new Date(Date.now() + 60_000);
      for (const file of ["agent.ts", "data/table.json", "tools/echo.ts", "hooks/audit.ts", "skills/notes/SKILL.md", "subagents/worker/tools/work.ts"]) utimesSync(join(dir, file), later, later);
      expect(await revisionOf(dir)).toBe(first);
      rmSync(join(dir, ".assembly-line"), { recursive: true, force: true });
      expect(await revisionOf(dir)).toBe(first);
      cpSync(dir, join(copy, "built"), { recursive: true });
      expect(await revisionOf(join(copy, "built"))).toBe(first);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it("changes the revision when a tool's schema or code, the model, the instructions, an override or a disable changes", async () => {
    const agentWith = (fields: string) => `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "a", ${fields} });\n`;
    const dir = agentFolder({ "agent.ts": agentWith(`model: "m/1", instructions: "one"`), "tools/echo.ts": toolSource() });
    const seen = new Set([await revisionOf(dir)]);
    const change = async (files: Record<string, string>) => {
      writeFiles(dir, files);
      const revision = await revisionOf(dir);
      expect(seen.has(revision)).toBe(false);
      seen.add(revision);
    };
    await change({ "tools/echo.ts": toolSource({ schema: `{ type: "object", properties: { value: { type: "number" } } }` }) });
    await change({ "tools/echo.ts": toolSource({ schema: `{ type: "object", properties: { value: { type: "number" } } }`, execute: "return { changed: true };" }) });
    await change({ "agent.ts": agentWith(`model: "m/2", instructions: "one"`) });
    await change({ "agent.ts": agentWith(`model: "m/2", instructions: "two"`) });
    await change({ "tools/ask_question.ts": toolSource({ schema: `{ type: "object" }`, execute: "return {};" }) });
    await change({ "tools/ask_question.ts": `import { disableTool } from "@assemblyline-agents/core";\nexport default disableTool();\n` });
  });

  const buildError = async (files: Record<string, string>) => {
    const dir = agentFolder(files);
    return buildAgent(dir).then(
      () => {
        throw new Error("expected the build to fail");
      },
      (error: Error & { code?: string }) => error,
    );
  };

  it("refuses a tool filename stem that is not snake_case, naming the file and the fix", async () => {
    const error = await buildError({ "agent.ts": MINIMAL_AGENT, "tools/recordNote.ts": toolSource() });
    expect(error.code).toBe("AL_ERR_TOOL_NAME");
    expect(error.message).toContain("tools/recordNote.ts");
    expect(error.message).toContain("tools/record_note.ts");
  });

  it("refuses a schema ajv cannot compile", async () => {
    const error = await buildError({ "agent.ts": MINIMAL_AGENT, "tools/bad_schema.ts": toolSource({ schema: `{ type: "object", properties: { a: { type: "strng" } } }` }) });
    expect(error.code).toBe("AL_ERR_TOOL_SCHEMA");
    expect(error.message).toMatch(/tools\/bad_schema\.ts: inputSchema is not a valid JSON Schema/);
  });

  it("refuses disableTool() in a file that matches no built-in", async () => {
    const error = await buildError({ "agent.ts": MINIMAL_AGENT, "tools/shell.ts": `import { disableTool } from "@assemblyline-agents/core";\nexport default disableTool();` });
    expect(error.code).toBe("AL_ERR_DISABLE_UNKNOWN_BUILTIN");
    expect(error.message).toMatch(/tools\/shell\.ts[\s\S]*bash/);
  });

  it.each(["run.complete", "tool.failed", "run.finished"])("refuses a hooks/ handler keyed %s, a type in the runtime's namespaces it never records, so the hook could never fire", async (type) => {
    const error = await buildError({
      "agent.ts": MINIMAL_AGENT,
      "hooks/audit.ts": `import { defineHook } from "@assemblyline-agents/core";\nexport default defineHook({ events: { ${JSON.stringify(type)}() {} } });`,
    });
    expect(error).toMatchObject({ code: "AL_ERR_HOOK_DEFINITION", message: expect.stringContaining(`"${type}"`) });
    expect((error as { fix?: string }).fix).toContain(`${type.split(".")[0]}.`);
  });

  it("refuses a hooks/ handler keyed tool.denied, which is never recorded, and points to approval.denied, which is", async () => {
    const error = await buildError({
      "agent.ts": MINIMAL_AGENT,
      "hooks/audit.ts": `import { defineHook } from "@assemblyline-agents/core";\nexport default defineHook({ events: { "tool.denied"() {} } });`,
    });
    expect(error).toMatchObject({ code: "AL_ERR_HOOK_DEFINITION", message: expect.stringContaining('"tool.denied"') });
    expect((error as { fix?: string }).fix).toContain('recorded as "approval.denied"');
    expect((error as { fix?: string }).fix).not.toMatch(/tool\.denied/);
  });

  it("builds hooks keyed by the runtime's own event types, skill seeding's included, by custom types and by *", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "hooks/audit.ts": `import { defineHook } from "@assemblyline-agents/core";\nexport default defineHook({ events: { "run.completed"() {}, "skill.seeded"() {}, "billing.charged"() {}, "*"() {} } });`,
    });
    const { manifest } = await buildAgent(dir);
    expect(manifest.hooks[0]?.events).toEqual(["*", "billing.charged", "run.completed", "skill.seeded"]);
  });

  it("refuses a harness: key in agent.ts", async () => {
    const error = await buildError({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "m/x", harness: "codex" } as never);`,
    });
    expect(error.code).toBe("AL_ERR_AGENT_HARNESS_KEY");
    expect(error.message).toMatch(/agentHarness or modelHarnesses/);
  });

  it.each([
    ["agent.ts", { "agent.ts": `export default { model: "m/x" };` }, "AL_ERR_AGENT_DEFINITION", /agent\.ts does not default-export defineAgent/],
    ["tools/", { "agent.ts": MINIMAL_AGENT, "tools/plain.ts": `export default { description: "x" };` }, "AL_ERR_TOOL_DEFINITION", /tools\/plain\.ts does not default-export defineTool/],
    ["hooks/", { "agent.ts": MINIMAL_AGENT, "hooks/audit.ts": `export default function () {}` }, "AL_ERR_HOOK_DEFINITION", /hooks\/audit\.ts does not default-export defineHook/],
    ["resolvers.ts", { "agent.ts": MINIMAL_AGENT, "resolvers.ts": `export default async () => null;` }, "AL_ERR_RESOLVER_DEFINITION", /resolvers\.ts does not default-export defineRunResolver/],
    ["context.ts", { "agent.ts": MINIMAL_AGENT, "context.ts": `export const policy = { kind: "custom" };` }, "AL_ERR_CONTEXT_DEFINITION", /context\.ts exports no context policy/],
    [
      "a context.ts agent.ts does not use",
      { "agent.ts": MINIMAL_AGENT, "context.ts": `import { defaultContext, defineContext } from "@assemblyline-agents/core";\nexport default defineContext({ kind: "custom", name: "unused", extends: defaultContext({}) });\n` },
      "AL_ERR_CONTEXT_DEFINITION",
      /context\.ts exports a context policy that agent\.ts does not use/,
    ],
    ["a missing agent.ts", { "tools/x.ts": toolSource() }, "AL_ERR_AGENT_DEFINITION", /has no agent\.ts/],
    ["a tool without execute", { "agent.ts": MINIMAL_AGENT, "tools/half.ts": `import { defineTool } from "@assemblyline-agents/core";\nexport default defineTool({ description: "d", inputSchema: { type: "object" } } as never);` }, "AL_ERR_TOOL_DEFINITION", /tools\/half\.ts: defineTool is missing execute/],
  ])("refuses a default export that is not what %s expects", async (_what, files, code, message) => {
    const error = await buildError(files as Record<string, string>);
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
    expect(error.message).toContain("fix:");
  });

  const agentWith = (fields: string) => `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "m/x", ${fields} } as never);\n`;
  const channelWith = (fields: string) => `import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: "/hook", ${fields} } as never);\nexport function normalizeHttp() { return { ack: true }; }`;
  const connectionWith = (helper: string, fields: string) => `import { ${helper} } from "@assemblyline-agents/core";\nexport default ${helper}({ description: "d", ${fields} } as never);\n`;
  it.each([
    ["agent.ts", { "agent.ts": agentWith("budget: { maxTurns: 1 }") }, "AL_ERR_AGENT_DEFINITION", /agent\.ts: unknown key "budget"/],
    ["a tool", { "agent.ts": MINIMAL_AGENT, "tools/send.ts": toolSource({ extra: "needApproval: true," }) }, "AL_ERR_TOOL_DEFINITION", /tools\/send\.ts: defineTool: unknown key "needApproval"/],
    ["a channel", { "agent.ts": MINIMAL_AGENT, "channels/hook.ts": channelWith(`method: ["GET"]`) }, "AL_ERR_CHANNEL_DEFINITION", /channels\/hook\.ts: defineChannel: unknown key "method"/],
    ["a channel's ingress", { "agent.ts": MINIMAL_AGENT, "channels/hook.ts": channelWith(`ingress: { requiredSecretEnvs: [["S"]] }`) }, "AL_ERR_CHANNEL_DEFINITION", /defineChannel ingress: unknown key "requiredSecretEnvs"/],
    ["dynamicAutomations", { "agent.ts": agentWith("dynamicAutomations: { dynamic: true, aproval: true }") }, "AL_ERR_AGENT_DEFINITION", /dynamicAutomations: unknown key "aproval"/],
    ["an automation", { "agent.ts": MINIMAL_AGENT, "automations/daily.ts": `import { defineAutomation } from "@assemblyline-agents/core";\nexport default defineAutomation({ schedule: "0 9 * * *", message: "m", enable: false } as never);\n` }, "AL_ERR_AUTOMATION_DEFINITION", /automations\/daily\.ts: defineAutomation: unknown key "enable"/],
    ["dynamicConnections", { "agent.ts": agentWith(`dynamicConnections: { dynamic: true, allowedHost: ["a.example"] }`) }, "AL_ERR_AGENT_DEFINITION", /dynamicConnections: unknown key "allowedHost"/],
    ["an HTTP connection", { "agent.ts": MINIMAL_AGENT, "connections/billing.ts": connectionWith("defineHttpConnection", `baseUrl: "https://b.example", endpoints: {}, requireApproval: true`) }, "AL_ERR_CONNECTION_DEFINITION", /connections\/billing\.ts: the connection: unknown key "requireApproval"/],
    ["an MCP connection", { "agent.ts": MINIMAL_AGENT, "connections/docs.ts": connectionWith("defineMcpConnection", `url: "https://m.example/mcp", spec: "x"`) }, "AL_ERR_CONNECTION_DEFINITION", /unknown key "spec"/],
    ["a tool (two side-effect classes)", { "agent.ts": MINIMAL_AGENT, "tools/send.ts": toolSource({ extra: 'sideEffect: "none", needsApproval: approvalRequired("Sends mail."),' }) }, "AL_ERR_TOOL_DEFINITION", /sideEffect is "none" but needsApproval's approvalRequired records "external"/],
    ["selfImprovement (approval of writes it cannot make)", { "agent.ts": agentWith("selfImprovement: { writeApproval: true }") }, "AL_ERR_AGENT_DEFINITION", /selfImprovement\.writeApproval is true but writable is not/],
    ["coreToolPolicy's modes", { "agent.ts": agentWith(`coreToolPolicy: { write: "aproval" }`) }, "AL_ERR_TOOL_POLICY", /agent\.ts coreToolPolicy: write has mode "aproval"/],
  ])("refuses a key or value %s does not take, naming it, where a typo would have built without its effect", async (_what, files, code, message) => {
    const error = await buildError(files as Record<string, string>);
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
    expect(error.message).toContain("fix:");
  });

  it("builds every key the helpers take", async () => {
    const dir = agentFolder({
      "agent.ts": agentWith(`id: "full", name: "Full", description: "d", instructions: "i", defaultTools: ["send"], coreToolPolicy: { bash: "approval", write: "disabled", send: "enabled" }, budgets: { maxTurns: 5 }, selfImprovement: { writable: false }, dynamicAutomations: { dynamic: true, approval: true }, dynamicConnections: { dynamic: true, approval: true, allowedHosts: ["a.example"] }`),
      "tools/send.ts": toolSource({ extra: `outputSchema: { type: "object" }, toModelOutput: (output) => output, needsApproval: true, defaultEnabled: true, sideEffect: "external", capability: { tags: ["mail"] },` }),
      "channels/hook.ts": channelWith(`methods: ["POST"], ingress: { requiredSecretEnv: [["HOOK_SECRET"]] }`),
      "connections/billing.ts": connectionWith("defineHttpConnection", `baseUrl: "https://b.example", endpoints: {}, auth: { grant: "g", header: "x-key" }, approval: true`),
      "connections/docs.ts": connectionWith("defineMcpConnection", `url: "https://m.example/mcp", approval: false`),
      "connections/spec.ts": connectionWith("defineOpenApiConnection", `spec: "https://s.example/openapi.json", baseUrl: "https://s.example"`),
    });
    const { manifest } = await buildAgent(dir);
    expect(manifest.agent.coreToolPolicy).toEqual({ bash: "approval", write: "disabled", send: "enabled" });
    expect(manifest.connections.map((connection) => connection.name)).toEqual(["billing", "docs", "spec"]);
  });

  it("refuses a sandbox.ts whose workingDirectory is not /workspace, and records a valid one", async () => {
    const error = await buildError({
      "agent.ts": MINIMAL_AGENT,
      "sandbox.ts": `import { defineSandbox } from "@assemblyline-agents/core";\nexport default defineSandbox({ adapter: "local", workingDirectory: "/runtime" } as never);`,
    });
    expect(error.code).toBe("AL_ERR_SANDBOX_DEFINITION");
    expect(error.message).toMatch(/sandbox\.ts: workingDirectory "\/runtime" is not allowed[\s\S]*physical \/workspace/);
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "sandbox.ts": `import { defineSandbox } from "@assemblyline-agents/core";\nexport default defineSandbox({ adapter: "local", image: "node:22" });` });
    expect((await buildAgent(dir)).manifest.sandbox).toMatchObject({ adapter: "local", image: "node:22", workingDirectory: "/workspace" });
  });

  it("compiles channels/ with their routes and ingress secrets, and refuses a bad or duplicate route", async () => {
    const channel = (route: string, extra = "") => `import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: ${JSON.stringify(route)}, methods: ["POST"]${extra} });\nexport function normalizeHttp() { return { ack: true }; }`;
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "channels/hook.ts": channel("/hook", `, ingress: { requiredSecretEnv: [["HOOK_SECRET"]] }`) });
    expect((await buildAgent(dir)).manifest.channels).toEqual([
      expect.objectContaining({ name: "hook", route: "/hook", methods: ["POST"], requiredSecretEnv: [["HOOK_SECRET"]], exports: { normalizeHttp: true, deliver: false, resolveAttachment: false } }),
    ]);
    const noSlash = await buildError({ "agent.ts": MINIMAL_AGENT, "channels/bad.ts": channel("hook") });
    expect(noSlash.code).toBe("AL_ERR_CHANNEL_DEFINITION");
    expect(noSlash.message).toMatch(/channels\/bad\.ts: route "hook" must start with \//);
    const twice = await buildError({ "agent.ts": MINIMAL_AGENT, "channels/a.ts": channel("/same"), "channels/b.ts": channel("/same") });
    expect(twice.message).toMatch(/route \/same is also served by channels\/a\.ts/);
  });

  it.each(["GET", "DELETE"])("refuses a channel without normalizeHttp that takes %s, which carries no message body, and builds it with normalizeHttp", async (method) => {
    const raw = `import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: "/hook", methods: ["POST", "${method}"] });\n`;
    const error = await buildError({ "agent.ts": MINIMAL_AGENT, "channels/hook.ts": raw });
    expect(error.code).toBe("AL_ERR_CHANNEL_DEFINITION");
    expect(error.message).toMatch(new RegExp(`channels/hook\\.ts: method ${method} on a channel without normalizeHttp`));
    expect(error.message).toMatch(/fix: Export normalizeHttp/);
    const provider = agentFolder({ "agent.ts": MINIMAL_AGENT, "channels/hook.ts": `${raw}export function normalizeHttp() { return { ack: true }; }\n` });
    expect((await buildAgent(provider)).manifest.channels).toEqual([expect.objectContaining({ route: "/hook", methods: ["POST", method] })]);
  });

  it("names the file when a source throws while loading", async () => {
    const error = await buildError({ "agent.ts": MINIMAL_AGENT, "tools/boom.ts": `throw new Error("kaboom");` });
    expect(error.code).toBe("AL_ERR_SOURCE_LOAD");
    expect(error.message).toMatch(/tools\/boom\.ts threw while loading: kaboom/);
  });
});

describe("loadRuntimeBundle", () => {
  it("refuses a manifest whose sources changed since the build", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource() });
    const { artifactRoot } = await buildAgent(dir);
    await expect(loadRuntimeBundle(artifactRoot)).resolves.toMatchObject({ artifactRoot });
    writeFiles(dir, { "tools/echo.ts": toolSource({ execute: "return { edited: true };" }) });
    await expect(loadRuntimeBundle(artifactRoot)).rejects.toThrow(/AL_ERR_MANIFEST_STALE: tools\/echo\.ts changed/);
  });

  it("says to build first when there is no manifest", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT });
    await expect(loadRuntimeBundle(join(dir, ".assembly-line"))).rejects.toThrow(/AL_ERR_MANIFEST_MISSING[\s\S]*assembly-line build/);
  });
});
