import { describe, expect, it } from "vitest";
import { approvalRequired, definePlugin, defineTool, type JsonValue } from "@assemblyline-agents/core";
import { buildAgent, createKernel } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

/**
 * A tool's approval gate as written in a file the types do not check (JavaScript, or a cast): a
 * value that is neither true, false nor approvalRequired(...) would read as "no approval" and the
 * tool would run ungated.
 */
describe("a tool's approval gate and side effect at build", () => {
  const cases: Array<[string, string, RegExp]> = [
    ["a plain object as needsApproval", `needsApproval: { reason: "Sends money", sideEffect: "external" },`, /tools\/pay\.ts: needsApproval is a plain object; it must be true, false or approvalRequired\("why", sideEffect\)/],
    ["a string as needsApproval", `needsApproval: "true",`, /needsApproval is "true"; it must be true, false or approvalRequired/],
    ["an unknown sideEffect", `needsApproval: true, sideEffect: "bogus",`, /sideEffect is "bogus"; it must be "none", "idempotent" or "external"/],
  ];
  for (const [what, extra, message] of cases) {
    it(`refuses ${what} with AL_ERR_TOOL_DEFINITION`, async () => {
      const error = await buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/pay.ts": toolSource({ extra }) })).catch((caught: Error) => caught);
      expect(error).toMatchObject({ code: "AL_ERR_TOOL_DEFINITION" });
      expect((error as Error).message).toMatch(message);
    });
  }

  it("builds the gates the types allow", async () => {
    for (const extra of ["needsApproval: true,", "needsApproval: false,", `needsApproval: approvalRequired("Sends money", "idempotent"), sideEffect: "idempotent",`, ""]) {
      await expect(buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/pay.ts": toolSource({ extra }) }))).resolves.toBeDefined();
    }
  });

  it("refuses approvalRequired with an unknown side effect where it is called", () => {
    expect(() => approvalRequired("Sends money", "sometimes" as never)).toThrow(/sideEffect is "sometimes"; it must be "none", "idempotent" or "external"/);
  });

  it("refuses a plugin's provided tool whose gate is not one", async () => {
    const ungated = defineTool<unknown, JsonValue>({ description: "Pays", inputSchema: { type: "object" }, needsApproval: { reason: "Sends money" } as never, execute: async () => ({ paid: true }) });
    const payments = definePlugin({
      name: "payments",
      version: "0.1.0",
      apply(kernel) {
        kernel.hooks.tools.tap("payments", (table) => {
          table.provide("pay", ungated, { provider: "payments" });
          return table;
        });
      },
    });
    const kernel = await createKernel({ plugins: [payments] });
    await expect(startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "hi" }], { kernel })).rejects.toThrow(/AL_ERR_TOOL_PROVIDED: plugin payments provided tool "pay": needsApproval is a plain object/);
  });
});
