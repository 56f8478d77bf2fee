// Compiled by test/authoring-types.test.ts: each @ts-expect-error marks a wrongly
// shaped definition the user's editor must flag. An unused one fails the build.
import {
  approvalRequired,
  defaultContext,
  defineAgent,
  defineChannel,
  defineGateway,
  defineHook,
  defineRunResolver,
  defineSandbox,
  defineTool,
  disableTool,
  type ToolExecutionContext,
} from "@assemblyline-agents/core";

export const goodTool = defineTool({
  description: "Echo.",
  inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
  needsApproval: approvalRequired("Externally visible.", "idempotent"),
  sideEffect: "idempotent",
  capability: { visibility: "deferred", execution: "direct", namespace: "demo", tags: ["a"], aliases: ["b"] },
  async execute(input: { message: string }, ctx: ToolExecutionContext) {
    await ctx.emit("echo.done", { message: input.message, key: ctx.idempotencyKey("echo") });
    return { message: input.message, approved: ctx.approvedToolCall, run: ctx.runId, revision: ctx.agentRevision };
  },
  toModelOutput(output) {
    return { message: output.message };
  },
});

// @ts-expect-error description is required
defineTool({ inputSchema: { type: "object" }, execute: () => ({}) });
// @ts-expect-error inputSchema is required
defineTool({ description: "x", execute: () => ({}) });
// @ts-expect-error sideEffect is one of none | idempotent | external
defineTool({ description: "x", inputSchema: {}, sideEffect: "sometimes", execute: () => ({}) });
// @ts-expect-error capability.visibility is auto | always | deferred | skill | hidden
defineTool({ description: "x", inputSchema: {}, capability: { visibility: "public" }, execute: () => ({}) });
// @ts-expect-error approvalRequired's side effect is a SideEffect
approvalRequired("why", "dangerous");

export const disabled = disableTool();

export const agent = defineAgent({ model: "openai/gpt-5.4-mini", context: defaultContext({ recentHistory: { maxMessages: 12 } }), coreToolPolicy: { bash: "approval" } });
// @ts-expect-error model is required
defineAgent({ instructions: "x" });
// @ts-expect-error agents may not choose a harness
defineAgent({ model: "openai/gpt-5.4-mini", harness: "codex" });
// @ts-expect-error coreToolPolicy modes are enabled | approval | disabled
defineAgent({ model: "m/x", coreToolPolicy: { bash: "off" } });

export const hook = defineHook({ events: { "run.completed"(event, ctx) { void event.seq; void ctx.agent.name; } } });
// @ts-expect-error hook handlers are functions
defineHook({ events: { "run.completed": true } });

export const resolver = defineRunResolver(async (ctx) => (ctx.metadata?.tier === "trial" ? { model: "openai/gpt-5.4-mini", defaultTools: ["read"] } : null));
// @ts-expect-error defaultTools is a list of names
defineRunResolver(() => ({ defaultTools: "read" }));

export const channel = defineChannel({ transport: "http", route: "/message", methods: ["POST"], ingress: { requiredSecretEnv: [["SECRET"]] } });
// @ts-expect-error only the http transport exists
defineChannel({ transport: "smtp", route: "/mail" });

export const sandbox = defineSandbox({ adapter: "local", image: "node:22", workingDirectory: "/workspace" });
// @ts-expect-error workingDirectory may only be /workspace
defineSandbox({ adapter: "local", workingDirectory: "/runtime" });

export const gateway = defineGateway({});
// @ts-expect-error gateway slots take adapter descriptors, not strings
defineGateway({ state: "postgres" });
