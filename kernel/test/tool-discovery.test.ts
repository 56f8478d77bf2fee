import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { defineTool, definePlugin, type JsonValue } from "@assemblyline-agents/core";
import { ToolTable, activateTools, activatedToolNames, buildAgent, createKernel, idempotencyKeyFor, inferVisibility } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { DEFERRED_TOOLS, VISIBLE_TOOLS, discoveryAgentFiles } from "./support/discovery-agent.js";
import type { CompletedOutcome } from "./support/probe-harness.js";
import { startAgent } from "./support/runtime.js";

const FILE_TOOLS = ["delete", "edit", "grep", "list", "read", "write"];
const BRIDGE_TOOLS = ["tool_call", "tool_describe", "tool_search"];
const scratch = mkdtempSync(join(tmpdir(), "al-discovery-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const names = (tools: Array<{ name: string }>) => tools.map((tool) => tool.name).sort();
const promptSize = (context: { instructions: string; tools: unknown[] }) => context.instructions.length + JSON.stringify(context.tools).length;

describe("an agent with 40 authored tools, 30 of them deferred", () => {
  const executionLog = join(scratch, "refunds.log");
  const dir = agentFolder(discoveryAgentFiles({ executionLog }));

  it("offers the core tools and the ten visible ones only, then searches, describes and calls a deferred tool through approval exactly once", async () => {
    writeFileSync(executionLog, "");
    const refund = { id: "inv_42", amount: 12.5, note: "damaged" };
    const { runtime, log, events } = await startAgent(dir, [
      { toolCalls: [{ name: "tool_search", input: { query: "receivables" } }] },
      { toolCalls: [{ name: "tool_search", input: { query: "refund payment", limit: 3 } }] },
      { toolCalls: [{ name: "tool_describe", input: { name: "refund_payment" } }] },
      { toolCalls: [{ name: "tool_call", input: { name: "refund_payment", input: refund } }] },
      { text: "Refunded." },
    ]);

    const paused = await runtime.run({ message: "Refund invoice inv_42" });
    expect(paused.status).toBe("waiting_approval");
    // The recorded model input: core + visible + bridge tools, none of the deferred ones.
    const first = log.contexts[0]!;
    expect(names(first.tools)).toEqual([...VISIBLE_TOOLS, "ask_question", ...FILE_TOOLS, ...BRIDGE_TOOLS].sort());
    expect(first.tools.some((tool) => DEFERRED_TOOLS.includes(tool.name))).toBe(false);
    expect(first.instructions).toContain("tool_search");

    const [byAlias, byWords, described] = log.outcomes.map((entry) => entry.outcome);
    expect(byAlias).toMatchObject({ status: "completed", output: { results: [{ name: "create_invoice", namespace: "billing" }] } });
    expect((byWords as CompletedOutcome<{ results: Array<{ name: string }> }>).output.results[0]!.name).toBe("refund_payment");
    expect((byWords as CompletedOutcome<{ results: JsonValue[] }>).output.results.length).toBeLessThanOrEqual(3);
    expect(described).toMatchObject({ status: "completed", output: { name: "refund_payment", needsApproval: true, inputSchema: { required: ["id"] } } });
    // Described, so offered directly from the next model call on.
    expect(log.offeredPerCall[2]).not.toContain("refund_payment");
    expect(log.offeredPerCall[3]).toContain("refund_payment");

    const approvalEvent = (await events(paused.runId)).find((event) => event.type === "approval.requested")!;
    expect(approvalEvent.data).toMatchObject({ toolName: "refund_payment", input: refund, via: "tool_call" });
    expect(paused.pendingApprovals?.[0]).toMatchObject({ toolName: "refund_payment" });
    expect(readFileSync(executionLog, "utf8")).toBe("");

    const done = await runtime.approve(paused.runId);
    expect(done.status).toBe("completed");
    const callId = approvalEvent.data.callId as string;
    expect(readFileSync(executionLog, "utf8")).toBe(`${callId}\n`);
    const completed = (await events(paused.runId)).filter((event) => event.type === "tool.completed" && event.data.toolName === "refund_payment");
    expect(completed).toHaveLength(1);
    expect(completed[0]!.data.output).toEqual({ refunded: 12.5, id: "inv_42", idempotencyKey: idempotencyKeyFor(paused.runId, callId, "refund") });
    // The resumed turn's model input keeps the promoted tool (recorded as tools.activated).
    expect(names(log.contexts[1]!.tools)).toContain("refund_payment");
    expect((await events(paused.runId)).filter((event) => event.type === "tools.activated").map((event) => event.data)).toEqual([
      { names: ["refund_payment"], source: "tool_describe" },
    ]);
  });

  it("prints the prompt size with and without discovery", async () => {
    const withDiscovery = await startAgent(dir, [{ text: "hi" }]);
    await withDiscovery.runtime.run({ message: "hi" });
    const everything = await startAgent(agentFolder(discoveryAgentFiles({ executionLog, discovery: false })), [{ text: "hi" }]);
    await everything.runtime.run({ message: "hi" });
    const small = promptSize(withDiscovery.log.contexts[0]!);
    const large = promptSize(everything.log.contexts[0]!);
    console.log(`prompt size for 40 authored tools: ${small} characters with discovery (30 deferred), ${large} without (${Math.round((100 * (large - small)) / large)}% smaller)`);
    expect(names(everything.log.contexts[0]!.tools)).toEqual(expect.arrayContaining(DEFERRED_TOOLS));
    expect(small).toBeLessThan(large / 2);
  });

  it("gates every call made through tool_call when the host's policy gates tool_call", async () => {
    const invoice = `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({ description: "Send an invoice to a customer.", capability: { visibility: "deferred", namespace: "billing" }, inputSchema: { type: "object", properties: {} },
  async execute() { globalThis.__invoicesSent = (globalThis.__invoicesSent ?? 0) + 1; return { sent: true }; } });`;
    (globalThis as { __invoicesSent?: number }).__invoicesSent = 0;
    const { runtime, events } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/send_invoice.ts": invoice }), [{ toolCalls: [{ name: "tool_call", input: { name: "send_invoice", input: {} } }] }, { text: "done" }], {
      coreToolPolicy: { tool_call: "approval" },
    });
    const paused = await runtime.run({ message: "bill them" });
    expect(paused.status).toBe("waiting_approval");
    expect((globalThis as { __invoicesSent?: number }).__invoicesSent).toBe(0);
    expect((await events(paused.runId)).find((event) => event.type === "approval.requested")?.data).toMatchObject({ toolName: "send_invoice", via: "tool_call", reason: "Host policy requires approval for tool_call." });
    expect((await runtime.approve(paused.runId)).status).toBe("completed");
    expect((globalThis as { __invoicesSent?: number }).__invoicesSent).toBe(1);
  });

  it("refuses through tool_call what a direct call would refuse: bad input names the inner tool and never executes", async () => {
    writeFileSync(executionLog, "");
    const { runtime, log, events } = await startAgent(dir, [
      { toolCalls: [{ name: "tool_call", input: { name: "refund_payment", input: { amount: 3 } } }] },
      { toolCalls: [{ name: "tool_call", input: { name: "no_such_tool", input: {} } }] },
      { toolCalls: [{ name: "tool_call", input: { name: "tool_search", input: { query: "x" } } }] },
      { toolCalls: [{ name: "tool_call", input: { tool: "refund_payment" } }] },
      { toolCalls: [{ name: "refund_payment", input: { id: "x" } }] },
      { text: "done" },
    ]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    const outputs = log.outcomes.map((entry) => entry.outcome);
    expect(outputs[0]).toMatchObject({ isError: true, output: { error: expect.stringMatching(/^Invalid input for refund_payment: .*id/) } });
    expect(outputs[1]).toMatchObject({ isError: true, output: { error: expect.stringMatching(/^Unknown tool "no_such_tool"/) } });
    expect(outputs[2]).toMatchObject({ isError: true, output: { error: "tool_call cannot call tool_search; call it directly." } });
    expect(outputs[3]).toMatchObject({ isError: true, output: { error: expect.stringMatching(/^Invalid input for tool_call/) } });
    // A deferred tool is not offered, so a direct call is refused until it is described.
    expect(outputs[4]).toMatchObject({ isError: true, output: { error: expect.stringMatching(/^Unknown tool "refund_payment".*tool_search/) } });
    const invalid = (await events(result.runId)).filter((event) => event.type === "tool.input_invalid");
    expect(invalid[0]!.data).toMatchObject({ toolName: "refund_payment" });
    expect(readFileSync(executionLog, "utf8")).toBe("");
  });

  it("replays a refused tool_call on resume instead of recording it again", async () => {
    const { runtime, events } = await startAgent(dir, [
      { toolCalls: [{ name: "tool_call", input: { tool: "refund_payment" } }] },
      { toolCalls: [{ name: "tool_call", input: { name: "refund_payment", input: { id: "inv_1", amount: 1 } } }] },
      { text: "done" },
    ]);
    const paused = await runtime.run({ message: "go" });
    expect(paused.status).toBe("waiting_approval");
    const approved = await runtime.approve(paused.runId);
    expect(approved.error ?? null).toBeNull();
    expect(approved.status).toBe("completed");
    const recorded = await events(paused.runId);
    expect(recorded.filter((event) => event.type === "tool.input_invalid")).toHaveLength(1);
    expect(recorded.filter((event) => event.type === "tool.replayed").map((event) => event.data.toolName)).toEqual(["tool_call"]);
  });

  it("accepts an alias as the name in tool_describe and tool_call", async () => {
    const { runtime, log } = await startAgent(dir, [
      { toolCalls: [{ name: "tool_describe", input: { name: "receivables" } }] },
      { toolCalls: [{ name: "tool_call", input: { name: "receivables", input: { id: "c-1" } } }] },
      { text: "ok" },
    ]);
    await runtime.run({ message: "go" });
    expect(log.outcomes[0]!.outcome).toMatchObject({ output: { name: "create_invoice", aliases: ["receivables"] } });
    expect(log.outcomes[1]!.outcome).toMatchObject({ isError: false, output: { tool: "create_invoice", id: "c-1" } });
  });

  it("describes a discovery tool it offers like any tool, without activating it or failing the run", async () => {
    const { runtime, log, types } = await startAgent(dir, [
      { toolCalls: [{ name: "tool_describe", input: { name: "tool_call" } }] },
      { toolCalls: [{ name: "tool_describe", input: { name: "tool_search" } }] },
      { text: "ok" },
    ]);
    const result = await runtime.run({ message: "how do I call tools?" });
    expect(result.status).toBe("completed");
    expect(log.outcomes[0]!.outcome).toMatchObject({ isError: false, output: { name: "tool_call", inputSchema: expect.objectContaining({ required: ["name", "input"] }) } });
    expect(log.outcomes[1]!.outcome).toMatchObject({ isError: false, output: { name: "tool_search" } });
    expect(await types(result.runId)).not.toContain("tools.activated");
    expect([...log.offeredPerCall[2]!].sort()).toEqual(names(log.contexts[0]!.tools));
  });

  it("shows in tool_describe, and records for a gated tool_call, the side-effect class an approvalRequired gives", async () => {
    const note = `import { approvalRequired, defineTool } from "@assemblyline-agents/core";
export default defineTool({ description: "Record a durable note.", capability: { visibility: "deferred" }, inputSchema: { type: "object", properties: {} },
  needsApproval: approvalRequired("Recording a note is a durable side effect.", "idempotent"), async execute() { return { recorded: true }; } });`;
    const { runtime, log, events } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/record_note.ts": note }), [
      { toolCalls: [{ name: "tool_describe", input: { name: "record_note" } }] },
      { toolCalls: [{ name: "tool_call", input: { name: "record_note", input: {} } }] },
      { text: "done" },
    ], { coreToolPolicy: { tool_call: "approval" } });
    const paused = await runtime.run({ message: "note it" });
    expect(log.outcomes[0]!.outcome).toMatchObject({ output: { name: "record_note", needsApproval: true, sideEffect: "idempotent" } });
    expect(paused.pendingApprovals?.[0]).toMatchObject({ sideEffect: "idempotent" });
    expect((await events(paused.runId)).find((event) => event.type === "approval.requested")?.data).toMatchObject({ toolName: "record_note", sideEffect: "idempotent" });
  });

  it("applies coreToolPolicy to the tool tool_call names", async () => {
    const { runtime, log } = await startAgent(dir, [{ toolCalls: [{ name: "tool_call", input: { name: "void_invoice", input: { id: "i" } } }] }, { text: "ok" }], {
      coreToolPolicy: { void_invoice: "approval", list_invoices: "disabled" },
    });
    const paused = await runtime.run({ message: "go" });
    expect(paused.status).toBe("waiting_approval");
    expect(paused.pendingApprovals?.[0]).toMatchObject({ toolName: "void_invoice" });
    const done = await runtime.approve(paused.runId);
    expect(done.status).toBe("completed");
    expect(log.outcomes.at(-1)!.outcome).toMatchObject({ status: "completed", output: { tool: "void_invoice" } });

    const disabled = await startAgent(dir, [{ toolCalls: [{ name: "tool_call", input: { name: "list_invoices", input: { id: "i" } } }] }, { text: "ok" }], {
      coreToolPolicy: { list_invoices: "disabled" },
    });
    await disabled.runtime.run({ message: "go" });
    expect(disabled.log.outcomes[0]!.outcome).toMatchObject({ isError: true, output: { error: expect.stringMatching(/disabled/) } });
  });
});

describe("visibility values", () => {
  const tool = (name: string, description: string, capability: string, extra = "") =>
    `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({ description: ${JSON.stringify(description)}, inputSchema: { type: "object" }, capability: ${capability}, ${extra} async execute() { return { ran: "${name}" }; } });`;
  const dir = agentFolder({
    "agent.ts": MINIMAL_AGENT,
    "tools/shown.ts": tool("shown", "Shown up front.", `{ visibility: "always" }`),
    "tools/plain.ts": tool("plain", "An auto tool of a small agent.", `{}`),
    "tools/later.ts": tool("later", "Reconcile ledger entries.", `{ visibility: "deferred", tags: ["accounting"] }`),
    "tools/forced.ts": tool("forced", "Deferred but enabled by default.", `{ visibility: "deferred" }`, "defaultEnabled: true,"),
    "tools/kept_back.ts": tool("kept_back", "Auto but kept back.", `{}`, "defaultEnabled: false,"),
    "tools/for_skill.ts": tool("for_skill", "Reconcile ledger entries for a skill.", `{ visibility: "skill" }`),
    "tools/internal.ts": tool("internal", "Reconcile ledger entries internally.", `{ visibility: "hidden" }`),
  });

  it("always and defaultEnabled: true are offered; auto (even in a small agent), deferred, defaultEnabled: false, skill and hidden are not", async () => {
    const { runtime, log } = await startAgent(dir, [{ text: "hi" }]);
    await runtime.run({ message: "hi" });
    expect(names(log.contexts[0]!.tools)).toEqual(["ask_question", ...FILE_TOOLS, ...BRIDGE_TOOLS, "forced", "shown"].sort());
  });

  it("tool_search finds deferred tools by tag, never hidden or skill tools", async () => {
    const { runtime, log } = await startAgent(dir, [
      { toolCalls: [{ name: "tool_search", input: { query: "reconcile ledger" } }] },
      { toolCalls: [{ name: "tool_search", input: { query: "accounting" } }] },
      { toolCalls: [{ name: "tool_search", input: { query: "kept back" } }] },
      { text: "ok" },
    ]);
    await runtime.run({ message: "hi" });
    const found = log.outcomes.map((entry) => (entry.outcome as CompletedOutcome<{ results: Array<{ name: string }> }>).output.results.map((hit) => hit.name));
    expect(found[0]).toEqual(["later"]);
    expect(found[1]).toEqual(["later"]);
    expect(found[2]).toEqual(["kept_back"]);
  });

  it("tool_call reaches deferred tools, refuses skill tools until a skill activates them, and never reaches hidden ones", async () => {
    const { runtime, log } = await startAgent(dir, [
      { toolCalls: [{ name: "tool_call", input: { name: "later", input: {} } }] },
      { toolCalls: [{ name: "tool_call", input: { name: "for_skill", input: {} } }] },
      { toolCalls: [{ name: "tool_call", input: { name: "internal", input: {} } }] },
      { toolCalls: [{ name: "internal", input: {} }] },
      { toolCalls: [{ name: "tool_describe", input: { name: "internal" } }] },
      { text: "ok" },
    ]);
    await runtime.run({ message: "hi" });
    const outputs = log.outcomes.map((entry) => entry.outcome);
    expect(outputs[0]).toEqual({ status: "completed", output: { ran: "later" }, isError: false });
    expect(outputs[1]).toMatchObject({ isError: true, output: { error: 'Tool "for_skill" is available only while a skill that names it is active.' } });
    expect(outputs[2]).toMatchObject({ isError: true, output: { error: expect.stringMatching(/^Unknown tool "internal"/) } });
    expect(outputs[3]).toMatchObject({ isError: true, output: { error: expect.stringMatching(/^Unknown tool "internal"/) } });
    expect(outputs[4]).toMatchObject({ isError: true, output: { error: 'No tool "internal". Search with tool_search.' } });
  });

  it("activateTools offers a skill tool for the rest of the run, recorded as tools.activated, and refuses hidden ones", async () => {
    const { runtime } = await startAgent(dir, [{ text: "hi" }]);
    const recorded: Array<{ type: string; data: unknown }> = [];
    const scope = {
      runId: "run_x",
      table: runtime.toolTable,
      visible: new Set<string>(["shown"]),
      offered: [] as Array<{ name: string }>,
      journal: { record: async (_runId: string, type: string, data: unknown) => void recorded.push({ type, data }) },
    };
    expect(await activateTools(scope as never, ["for_skill", "shown"], "skill:ledger")).toEqual(["for_skill"]);
    expect(recorded).toEqual([{ type: "tools.activated", data: { names: ["for_skill"], source: "skill:ledger" } }]);
    expect(scope.visible.has("for_skill")).toBe(true);
    expect(scope.offered.map((tool) => tool.name)).toEqual(["for_skill"]);
    expect(activatedToolNames(recorded.map((event, index) => ({ ...event, id: `e${index}`, runId: "run_x", seq: index + 1, createdAt: "" })) as never)).toEqual(["for_skill"]);
    await expect(activateTools(scope as never, ["internal"], "skill:ledger")).rejects.toThrow(/AL_ERR_DEFAULT_TOOL_UNKNOWN/);
    // A tool the run already offers, a discovery tool included, is left as it is.
    scope.visible.add("tool_call");
    expect(await activateTools(scope as never, ["tool_call", "for_skill"], "tool_describe")).toEqual([]);
    expect(recorded).toHaveLength(1);
  });

  it("does not offer the bridge tools when nothing is deferred", async () => {
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/alpha.ts": toolSource({ upFront: true }) }), [{ text: "hi" }]);
    await runtime.run({ message: "hi" });
    expect(names(log.contexts[0]!.tools)).toEqual(["alpha", "ask_question", ...FILE_TOOLS].sort());
  });

  it("offers a sandbox tool only when the host has a sandbox adapter", async () => {
    const sandboxed = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/shell_job.ts": tool("shell_job", "Run a job in the sandbox.", `{ visibility: "always", execution: "sandbox" }`) });
    const without = await startAgent(sandboxed, [{ toolCalls: [{ name: "shell_job", input: {} }] }, { text: "ok" }]);
    await without.runtime.run({ message: "hi" });
    expect(names(without.log.contexts[0]!.tools)).not.toContain("shell_job");
    expect(without.log.outcomes[0]!.outcome).toMatchObject({ isError: true, output: { error: 'Tool "shell_job" needs a sandbox, and this host has no sandbox adapter.' } });
    // Only its presence matters here: nothing acquires a sandbox in this run.
    const present = { name: "present", acquire: () => Promise.reject(new Error("not used")), release: async () => undefined };
    const withSandbox = await startAgent(sandboxed, [{ text: "hi" }], { sandbox: present });
    await withSandbox.runtime.run({ message: "hi" });
    expect(names(withSandbox.log.contexts[0]!.tools)).toEqual(expect.arrayContaining(["shell_job", "bash"]));
  });

  it("refuses through tool_call, by name, a deferred sandbox tool on a host without a sandbox adapter, and the run goes on", async () => {
    const sandboxed = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/shell_job.ts": `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({ description: "Run a job in the sandbox.", inputSchema: { type: "object" }, capability: { visibility: "deferred", execution: "sandbox" },
  async execute(input, ctx) { await ctx.getSandbox(); return { ran: "shell_job" }; } });`,
      "tools/later.ts": tool("later", "Reconcile ledger entries.", `{ visibility: "deferred" }`),
    });
    const { runtime, log } = await startAgent(sandboxed, [{ toolCalls: [{ name: "tool_call", input: { name: "shell_job", input: {} } }] }, { text: "ok" }]);
    const run = await runtime.run({ message: "hi" });
    expect(run.status).toBe("completed");
    expect(log.outcomes[0]!.outcome).toMatchObject({ isError: true, output: { error: 'Tool "shell_job" needs a sandbox, and this host has no sandbox adapter.' } });
  });

  it("writes the inference rule down as a function, first match wins", () => {
    const rule = (origin: "built-in" | "authored" | "override" | "provided", definition: object, listed: boolean | null = null) =>
      inferVisibility({ origin, definition, listed }).visibility;
    expect(rule("authored", { capability: { visibility: "hidden" } }, true)).toBe("hidden");
    expect(rule("authored", { capability: { visibility: "skill" } }, true)).toBe("skill");
    expect(rule("authored", { capability: { visibility: "deferred" } }, true)).toBe("always");
    expect(rule("authored", { capability: { visibility: "deferred" }, defaultEnabled: true })).toBe("always");
    expect(rule("authored", { capability: { visibility: "always" } }, false)).toBe("always");
    expect(rule("built-in", {}, false)).toBe("deferred");
    expect(rule("authored", { defaultEnabled: false })).toBe("deferred");
    expect(rule("built-in", {})).toBe("always");
    expect(rule("override", {})).toBe("always");
    expect(rule("provided", {})).toBe("deferred");
    expect(rule("authored", {})).toBe("deferred");
    expect(rule("authored", { capability: { namespace: "billing", tags: ["invoice"] } })).toBe("deferred");
    expect(rule("authored", {}, true)).toBe("always");
    expect(rule("authored", { defaultEnabled: true })).toBe("always");
    expect(rule("authored", { capability: { visibility: "always" } })).toBe("always");
  });
});

describe("an authored tool's default visibility", () => {
  /** A tool that declares nothing about its visibility, unless `extra` does. */
  const tool = (description: string, extra = "") =>
    `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({ description: ${JSON.stringify(description)}, inputSchema: { type: "object", properties: { id: { type: "string" } } }, ${extra} async execute(input) { return { ran: ${JSON.stringify(description)}, id: input.id }; } });`;

  it("is deferred when it declares nothing, even as the agent's only tool: not offered, found by tool_search, run by tool_call", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/lookup_order.ts": tool("Look up a customer order by its id.") });
    const { runtime, log } = await startAgent(dir, [
      { toolCalls: [{ name: "lookup_order", input: { id: "o-1" } }] },
      { toolCalls: [{ name: "tool_search", input: { query: "customer order" } }] },
      { toolCalls: [{ name: "tool_call", input: { name: "lookup_order", input: { id: "o-1" } } }] },
      { text: "done" },
    ]);
    expect((await runtime.run({ message: "find order o-1" })).status).toBe("completed");
    expect(runtime.toolTable.get("lookup_order")).toMatchObject({ origin: "authored", visibility: "deferred" });
    expect(names(log.contexts[0]!.tools)).toEqual(["ask_question", ...FILE_TOOLS, ...BRIDGE_TOOLS].sort());
    const [direct, searched, called] = log.outcomes.map((entry) => entry.outcome);
    expect(direct).toMatchObject({ isError: true, output: { error: expect.stringMatching(/^Unknown tool "lookup_order".*tool_search/) } });
    expect(searched).toMatchObject({ isError: false, output: { results: [{ name: "lookup_order" }] } });
    expect(called).toEqual({ status: "completed", output: { ran: "Look up a customer order by its id.", id: "o-1" }, isError: false });
  });

  it('is offered up front when agent.ts defaultTools lists it, defaultEnabled is true or capability.visibility is "always"; a namespace and tags only help tool_search', async () => {
    const declared = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/enabled.ts": tool("Enabled by default.", "defaultEnabled: true,"),
      "tools/shown.ts": tool("Always shown.", `capability: { visibility: "always" },`),
      "tools/tagged.ts": tool("Send an invoice reminder.", `capability: { namespace: "billing", tags: ["invoice"] },`),
      "tools/plain.ts": tool("Declares nothing."),
    });
    const first = await startAgent(declared, [{ toolCalls: [{ name: "tool_search", input: { query: "invoice" } }] }, { text: "ok" }]);
    await first.runtime.run({ message: "hi" });
    expect(names(first.log.contexts[0]!.tools)).toEqual(["ask_question", ...FILE_TOOLS, ...BRIDGE_TOOLS, "enabled", "shown"].sort());
    expect(first.log.outcomes[0]!.outcome).toMatchObject({ output: { results: [{ name: "tagged", namespace: "billing" }] } });

    const listed = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["listed", "ask_question", "read"] });`,
      "tools/listed.ts": tool("Listed in agent.ts."),
    });
    const second = await startAgent(listed, [{ toolCalls: [{ name: "listed", input: { id: "x" } }] }, { text: "ok" }]);
    await second.runtime.run({ message: "hi" });
    expect(names(second.log.contexts[0]!.tools)).toEqual(["ask_question", "listed", "read", ...BRIDGE_TOOLS].sort());
    expect(second.log.outcomes[0]!.outcome).toEqual({ status: "completed", output: { ran: "Listed in agent.ts.", id: "x" }, isError: false });
  });
});

describe("agent.ts defaultTools and resolvers", () => {
  it("keeps unlisted tools, built-ins such as ask_question included, behind discovery when agent.ts lists defaultTools", async () => {
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["alpha", "read"] });`,
      "tools/alpha.ts": toolSource(),
      "tools/beta.ts": toolSource(),
    });
    const { runtime, log } = await startAgent(dir, [
      { toolCalls: [{ name: "tool_call", input: { name: "beta", input: { value: "v" } } }] },
      { toolCalls: [{ name: "tool_search", input: { query: "ask the user a question" } }] },
      { text: "ok" },
    ]);
    await runtime.run({ message: "hi" });
    expect(names(log.contexts[0]!.tools)).toEqual(["alpha", "read", ...BRIDGE_TOOLS].sort());
    expect(log.outcomes[0]!.outcome).toEqual({ status: "completed", output: { echoed: "v" }, isError: false });
    expect(log.outcomes[1]!.outcome).toMatchObject({ output: { results: expect.arrayContaining([expect.objectContaining({ name: "ask_question" })]) } });
  });

  it("refuses at build a skill-only tool that agent.ts defaultTools lists, rather than leaving it out of the offer", async () => {
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["read", "publish_notes"] });`,
      "tools/publish_notes.ts": toolSource({ extra: `capability: { visibility: "skill" },` }),
      "skills/release/SKILL.md": "---\ndescription: Release.\ntools: [publish_notes]\n---\n1. Publish.\n",
    });
    await expect(buildAgent(dir)).rejects.toMatchObject({
      code: "AL_ERR_DEFAULT_TOOL_UNKNOWN",
      message: expect.stringContaining('agent.ts defaultTools: "publish_notes" is available only while a skill is active; remove it from defaultTools or drop visibility: "skill"'),
    });
  });

  it("fails a run whose resolver lists a skill-only tool, as agent.ts's list is refused, instead of offering it up front", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/publish_notes.ts": toolSource({ extra: `capability: { visibility: "skill" },` }),
      "skills/release/SKILL.md": "---\ndescription: Release.\ntools: [publish_notes]\n---\n1. Publish.\n",
      "resolvers.ts": `import { defineRunResolver } from "@assemblyline-agents/core";
export default defineRunResolver(async () => ({ defaultTools: ["read", "publish_notes"] }));`,
    });
    const { runtime, log } = await startAgent(dir, [{ text: "hi" }]);
    const result = await runtime.run({ message: "hi" });
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({ code: "AL_ERR_DEFAULT_TOOL_UNKNOWN", message: expect.stringContaining('"publish_notes" is available only while a skill is active') });
    expect(log.contexts).toHaveLength(0);
  });

  it("refuses to start a runtime whose agent.ts defaultTools names an unknown or unrunnable tool", async () => {
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["read", "nonexistent", "bash"] });`,
    });
    await expect(startAgent(dir, [{ text: "hi" }])).rejects.toThrow(/AL_ERR_DEFAULT_TOOL_UNKNOWN: agent.ts defaultTools: "nonexistent" is not a tool of this agent; "bash" needs a sandbox/);
  });

  it("lets a skill bring back only tools a resolver's defaultTools leave within reach: its skill-only tools, and deferred ones behind tool_call", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/publish_notes.ts": toolSource({ extra: `capability: { visibility: "skill" },` }),
      "tools/later.ts": toolSource({ extra: `capability: { visibility: "deferred" },` }),
      "skills/report/SKILL.md": "---\ndescription: Write a report.\ntools: [write, publish_notes, later]\n---\n1. Write it.\n",
      "resolvers.ts": `import { defineRunResolver } from "@assemblyline-agents/core";
export default defineRunResolver(async (ctx) => {
  if (ctx.metadata?.plan === "trial") return { defaultTools: ["read", "list", "load_skill"] };
  if (ctx.metadata?.plan === "discovery") return { defaultTools: ["read", "load_skill", "tool_call"] };
  return null;
});`,
    });
    const loadThenWrite = [
      { toolCalls: [{ name: "load_skill", input: { name: "report" } }] },
      { toolCalls: [{ name: "write", input: { path: "/memory/report.md", content: "x" } }] },
      { text: "done" },
    ];
    const loaded = (outcome: unknown) => (outcome as CompletedOutcome<{ activatedTools: string[]; unavailableTools?: string[] }>).output;

    const trial = await startAgent(dir, loadThenWrite);
    const trialRun = await trial.runtime.run({ message: "go", metadata: { plan: "trial" } });
    expect(trialRun.status).toBe("completed");
    expect(loaded(trial.log.outcomes[0]!.outcome)).toMatchObject({ activatedTools: ["publish_notes"], unavailableTools: ["write", "later"] });
    expect([...trial.log.offeredPerCall[1]!].sort()).toEqual(["list", "load_skill", "publish_notes", "read"]);
    expect(trial.log.outcomes[1]!.outcome).toMatchObject({ isError: true, output: { error: expect.stringMatching(/^Unknown tool "write"/) } });

    const discovery = await startAgent(dir, loadThenWrite);
    await discovery.runtime.run({ message: "go", metadata: { plan: "discovery" } });
    expect(loaded(discovery.log.outcomes[0]!.outcome)).toMatchObject({ activatedTools: ["publish_notes", "later"], unavailableTools: ["write"] });
    expect([...discovery.log.offeredPerCall[1]!].sort()).toEqual(["later", "load_skill", "publish_notes", "read", "tool_call"]);

    // Without a resolver's list the skill brings every tool it names.
    const authored = await startAgent(dir, loadThenWrite);
    await authored.runtime.run({ message: "go" });
    expect(loaded(authored.log.outcomes[0]!.outcome)).toEqual(expect.objectContaining({ activatedTools: ["write", "publish_notes", "later"] }));
    expect(loaded(authored.log.outcomes[0]!.outcome).unavailableTools).toBeUndefined();
    expect(authored.log.outcomes[1]!.outcome).toMatchObject({ isError: false });
  });

  it("fails a run whose resolver names an unknown tool, naming it, instead of dropping it", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/alpha.ts": toolSource(),
      "resolvers.ts": `import { defineRunResolver } from "@assemblyline-agents/core";
export default defineRunResolver(async () => ({ defaultTools: ["alpha", "billing_lookup"] }));`,
    });
    const { runtime, log } = await startAgent(dir, [{ text: "hi" }]);
    const result = await runtime.run({ message: "hi" });
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({ code: "AL_ERR_DEFAULT_TOOL_UNKNOWN", message: expect.stringContaining('"billing_lookup" is not a tool of this agent') });
    expect(log.contexts).toHaveLength(0);
  });
});

describe("tools provided from outside the agent folder", () => {
  const lookup = defineTool<{ email: string }, JsonValue>({
    description: "Look up a CRM contact by email.",
    inputSchema: { type: "object", properties: { email: { type: "string" } }, required: ["email"] },
    capability: { tags: ["contact"] },
    async execute(input) {
      return { contact: input.email };
    },
  });
  /** A plugin that provides one tool, as a connection does. */
  const providing = (plugin: string, name: string, definition: typeof lookup) =>
    definePlugin({
      name: plugin,
      version: "0.1.0",
      apply(kernel) {
        kernel.hooks.tools.tap(plugin, (table) => {
          table.provide(name, definition, { provider: plugin });
          return table;
        });
      },
    });
  const connection = providing("test-connection", "crm__lookup_contact", lookup);

  it("defers them, finds them by namespace and calls them through tool_call", async () => {
    const kernel = await createKernel({ plugins: [connection] });
    const { runtime, log } = await startAgent(
      agentFolder({ "agent.ts": MINIMAL_AGENT }),
      [
        { toolCalls: [{ name: "tool_search", input: { query: "crm contact" } }] },
        { toolCalls: [{ name: "tool_call", input: { name: "crm__lookup_contact", input: { email: "a@example.com" } } }] },
        { text: "ok" },
      ],
      { kernel },
    );
    await runtime.run({ message: "hi" });
    expect(names(log.contexts[0]!.tools)).not.toContain("crm__lookup_contact");
    expect(log.outcomes[0]!.outcome).toMatchObject({ output: { results: [{ name: "crm__lookup_contact", namespace: "crm" }] } });
    expect(log.outcomes[1]!.outcome).toEqual({ status: "completed", output: { contact: "a@example.com" }, isError: false });
    expect(runtime.toolTable.get("crm__lookup_contact")).toMatchObject({ origin: "provided", provider: "test-connection", visibility: "deferred" });
  });

  it("refuses a provided tool whose input schema does not compile, when it is provided", async () => {
    const broken = providing("broken", "crm__broken", { ...lookup, inputSchema: { type: "object", properties: { email: { type: "no-such-type" } } } });
    const kernel = await createKernel({ plugins: [broken] });
    await expect(startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "hi" }], { kernel })).rejects.toThrow(
      /AL_ERR_TOOL_PROVIDED: plugin broken provided tool "crm__broken": its inputSchema or outputSchema does not compile/,
    );
  });

  it("checks the formats the runtime knows in a provided tool's input, and leaves the provider's own formats to its service", async () => {
    const stamped = providing("stamped", "crm__stamped", {
      ...lookup,
      inputSchema: { type: "object", properties: { email: { type: "string", format: "email" }, since: { type: "integer", format: "unix-time" } }, required: ["email"] },
    });
    const kernel = await createKernel({ plugins: [stamped] });
    const { runtime, log } = await startAgent(
      agentFolder({ "agent.ts": MINIMAL_AGENT }),
      [
        { toolCalls: [{ name: "tool_search", input: { query: "crm contact" } }] },
        { toolCalls: [{ name: "tool_call", input: { name: "crm__stamped", input: { email: "not an email", since: 1 } } }] },
        { toolCalls: [{ name: "tool_call", input: { name: "crm__stamped", input: { email: "a@example.com", since: 1 } } }] },
        { text: "ok" },
      ],
      { kernel },
    );
    await runtime.run({ message: "hi" });
    expect(JSON.stringify(log.outcomes[1]!.outcome)).toContain('must match format \\"email\\"');
    expect(log.outcomes[2]!.outcome).toEqual({ status: "completed", output: { contact: "a@example.com" }, isError: false });
  });

  it("refuses to start when agent.ts defaultTools lists a provided skill-only tool", async () => {
    const skillOnly = providing("skill-only", "crm__merge_contacts", { ...lookup, capability: { visibility: "skill" } });
    const kernel = await createKernel({ plugins: [skillOnly] });
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["read", "crm__merge_contacts"] });`,
    });
    await expect(startAgent(dir, [{ text: "hi" }], { kernel })).rejects.toThrow(
      /AL_ERR_DEFAULT_TOOL_UNKNOWN: agent\.ts defaultTools: "crm__merge_contacts" is available only while a skill is active/,
    );
  });

  it("refuses a provided tool whose execute or toModelOutput is not a function, when it is provided", async () => {
    const noExecute = providing("no-execute", "crm__no_execute", { ...lookup, execute: "run" as never });
    await expect(startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "hi" }], { kernel: await createKernel({ plugins: [noExecute] }) })).rejects.toThrow(
      /AL_ERR_TOOL_PROVIDED: plugin no-execute provided tool "crm__no_execute": execute must be a function \(input, ctx\) => result/,
    );
    const badProjection = providing("bad-projection", "crm__bad_projection", { ...lookup, toModelOutput: "summary" as never });
    await expect(startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "hi" }], { kernel: await createKernel({ plugins: [badProjection] }) })).rejects.toThrow(
      /AL_ERR_TOOL_PROVIDED: plugin bad-projection provided tool "crm__bad_projection": toModelOutput must be a function/,
    );
  });

  it("refuses a provided tool that takes an alias an authored tool declares, so the alias keeps reaching that tool and its approval", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/create_invoice.ts": toolSource({ extra: `capability: { visibility: "deferred", aliases: ["receivables"] }, needsApproval: true,` }),
    });
    const start = async (name: string, definition: typeof lookup) => startAgent(dir, [{ text: "hi" }], { kernel: await createKernel({ plugins: [providing("other", name, definition)] }) });
    await expect(start("export__receivables", { ...lookup, capability: { aliases: ["receivables"] } })).rejects.toThrow(
      /AL_ERR_TOOL_PROVIDED: plugin other provided tool "export__receivables": alias "receivables" is already an alias of authored tool "create_invoice"/,
    );
    await expect(start("receivables", lookup)).rejects.toThrow(/AL_ERR_TOOL_PROVIDED: plugin other provided tool "receivables": the name is an alias of authored tool "create_invoice"/);
    await expect(start("export__invoices", { ...lookup, capability: { aliases: ["create_invoice"] } })).rejects.toThrow(
      /AL_ERR_TOOL_PROVIDED: plugin other provided tool "export__invoices": alias "create_invoice" is already the name of authored tool "create_invoice"/,
    );
  });

  it("refuses a provided tool whose alias another provided tool declares, or is its own name", () => {
    const table = new ToolTable();
    table.provide("crm__find_customer", { ...lookup, capability: { aliases: ["customer"] } }, { provider: "crm" });
    expect(() => table.provide("shop__find_customer", { ...lookup, capability: { aliases: ["customer"] } }, { provider: "shop" })).toThrow(
      /AL_ERR_TOOL_PROVIDED: plugin shop provided tool "shop__find_customer": alias "customer" is already an alias of provided tool "crm__find_customer" \(plugin crm\)/,
    );
    expect(() => table.provide("shop__lookup", { ...lookup, capability: { aliases: ["shop__lookup"] } }, { provider: "shop" })).toThrow(/alias "shop__lookup" is the tool's own name/);
    expect(table.resolve("customer")?.name).toBe("crm__find_customer");
    expect(table.has("shop__find_customer")).toBe(false);
  });

  it("refuses a provided tool name longer than the 64 characters model APIs take", async () => {
    const longest = "crm__" + "a".repeat(59);
    const table = new ToolTable();
    table.provide(longest, lookup, { provider: "crm" });
    expect(table.has(longest)).toBe(true);
    const kernel = await createKernel({ plugins: [providing("long", `${longest}a`, lookup)] });
    await expect(startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "hi" }], { kernel })).rejects.toThrow(
      /AL_ERR_TOOL_PROVIDED: plugin long provided tool "crm__a+": the name is 65 characters; model APIs take at most 64/,
    );
  });

  it("refuses a provided tool whose name is taken", async () => {
    const clash = providing("clash", "read", lookup);
    const kernel = await createKernel({ plugins: [clash] });
    await expect(startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "hi" }], { kernel })).rejects.toThrow(
      /AL_ERR_TOOL_PROVIDED: plugin clash provided tool "read": the name is taken by a built-in tool/,
    );
  });
});

describe("tool_search over a table that changes in place", () => {
  const tool = (description: string, capability: { aliases?: string[] } = {}) =>
    defineTool({ description, inputSchema: { type: "object", properties: {} }, capability, execute: () => ({}) });
  const found = (table: ToolTable, query: string) => table.search(query, 5).map((hit) => hit.name);

  it("finds a tool provided after another was withdrawn, the table as large as before, and not the withdrawn one", () => {
    const table = new ToolTable();
    table.provide("crm__find_customer", tool("Find a customer record by email."), { provider: "connections" });
    expect(found(table, "customer")).toEqual(["crm__find_customer"]);
    // A connection swapped for another with as many tools (ConnectionRegistry withdraws, then provides).
    table.delete("crm__find_customer");
    table.provide("billing__create_invoice", tool("Create an invoice for an order."), { provider: "connections" });
    expect(found(table, "invoice")).toEqual(["billing__create_invoice"]);
    expect(found(table, "customer")).toEqual([]);
  });

  it("searches a re-provided tool's new description, not the one it was first provided with", () => {
    const table = new ToolTable();
    table.provide("docs__lookup", tool("Look up a page in the wiki."), { provider: "connections" });
    expect(found(table, "wiki")).toEqual(["docs__lookup"]);
    table.delete("docs__lookup");
    table.provide("docs__lookup", tool("Look up a ticket in the tracker."), { provider: "connections" });
    expect(found(table, "wiki")).toEqual([]);
    expect(table.search("tracker", 5)).toEqual([expect.objectContaining({ name: "docs__lookup", description: "Look up a ticket in the tracker." })]);
  });

  it("finds a tool set into the table, as a subagent's connection tools are, by tool_search and by its alias", () => {
    const root = new ToolTable();
    root.provide("crm__find_customer", tool("Find a customer record by email.", { aliases: ["lookup"] }), { provider: "connections" });
    root.provide("billing__create_invoice", tool("Create an invoice for an order.", { aliases: ["invoice"] }), { provider: "connections" });
    const child = new ToolTable();
    child.set("crm__find_customer", root.get("crm__find_customer")!);
    expect(found(child, "customer")).toEqual(["crm__find_customer"]);
    expect(child.resolve("invoice")).toBeUndefined();
    child.delete("crm__find_customer");
    child.set("billing__create_invoice", root.get("billing__create_invoice")!);
    expect(found(child, "customer")).toEqual([]);
    expect(found(child, "invoice")).toEqual(["billing__create_invoice"]);
    expect(child.resolve("lookup")).toBeUndefined();
    expect(child.resolve("invoice")?.name).toBe("billing__create_invoice");
    child.clear();
    expect(found(child, "invoice")).toEqual([]);
  });
});

describe("capability metadata at build", () => {
  const withCapability = (extra: string) => toolSource({ extra });
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ["an unknown visibility", { "tools/a.ts": withCapability(`capability: { visibility: "sometimes" },`) }, /tools\/a\.ts: capability\.visibility "sometimes" is not one of auto, always, deferred, skill, hidden/],
    ["an unknown execution", { "tools/a.ts": withCapability(`capability: { execution: "remote" },`) }, /capability\.execution "remote" is not one of auto, direct, sandbox, both/],
    ["a namespace that is not a lowercase word", { "tools/a.ts": withCapability(`capability: { namespace: "Billing Team" },`) }, /capability\.namespace "Billing Team" must be a lowercase word/],
    ["tags that are not words", { "tools/a.ts": withCapability(`capability: { tags: ["ok", 3] },`) }, /capability\.tags must be an array of lowercase words/],
    ["an unknown capability key", { "tools/a.ts": withCapability(`capability: { visiblity: "deferred" },`) }, /capability has unknown key\(s\) visiblity/],
    ["defaultEnabled on a hidden tool", { "tools/a.ts": withCapability(`capability: { visibility: "hidden" }, defaultEnabled: true,`) }, /defaultEnabled: true contradicts capability\.visibility "hidden"/],
    ["an alias that is another tool's name", { "tools/a.ts": withCapability(`capability: { aliases: ["b"] },`), "tools/b.ts": toolSource() }, /tools\/a\.ts: alias "b" is already the name or an alias of tool b/],
    ["an alias that is a built-in's name", { "tools/a.ts": withCapability(`capability: { aliases: ["read"] },`) }, /alias "read" is already the name or an alias of tool read/],
  ];
  for (const [what, files, message] of cases) {
    it(`refuses ${what} with AL_ERR_TOOL_CAPABILITY`, async () => {
      const error = await buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, ...files })).catch((caught: Error) => caught);
      expect(error).toMatchObject({ code: "AL_ERR_TOOL_CAPABILITY" });
      expect((error as Error).message).toMatch(message);
    });
  }
});
