import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { JsonValue } from "@assemblyline-agents/core";
import { startBuilt } from "./support/runtime.js";
import { agentFolder, toolSource } from "./support/agent-folder.js";

/** The root looks a customer up, then delegates to a child that looks up the same one. */
function customerAgent(): string {
  const dir = agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname });
`,
    "tools/lookup.ts": toolSource({
      upFront: true,
      execute: "if (!ctx.resources) return { available: false };\n    return { available: true, customer: await ctx.resources.customers.find(input.value) };",
    }),
    "subagents/clerk/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Looks customers up.", tools: ["lookup"] });
`,
  });
  const lookup = { toolCalls: [{ name: "lookup", input: { value: "c-7" } }] };
  writeFileSync(
    join(dir, "script.json"),
    JSON.stringify({
      turns: [lookup, { toolCalls: [{ name: "spawn_subagent", input: { name: "clerk", task: "Look up c-7." } }] }, { text: "done" }],
      subagents: { clerk: { turns: [lookup, { text: "found" }] } },
    }),
  );
  return dir;
}

describe("RuntimeOptions.resources", () => {
  it("gives the host's own handles to every tool call as ctx.resources, a subagent's included", async () => {
    const asked: string[] = [];
    // A live handle, not JSON: the tool must get this very object.
    const customers = {
      async find(id: string) {
        asked.push(id);
        return { id, name: "Ada" };
      },
    };
    const { runtime, state } = await startBuilt(customerAgent(), { resources: { customers } });
    const parent = await runtime.run({ message: "go" });
    expect(parent.status).toBe("completed");
    const child = (await runtime.listEvents(parent.runId)).find((event) => event.type === "subagent.started")!.data.childRunId as string;
    const outputOf = async (runId: string) => (await state.listToolCalls(runId)).find((call) => call.toolName === "lookup")!.output as JsonValue;
    expect(await outputOf(parent.runId)).toEqual({ available: true, customer: { id: "c-7", name: "Ada" } });
    expect(await outputOf(child)).toEqual({ available: true, customer: { id: "c-7", name: "Ada" } });
    expect(asked).toEqual(["c-7", "c-7"]);
  });

  it("leaves ctx.resources undefined when the host passes none, and refuses resources that are no object", async () => {
    const dir = customerAgent();
    const { runtime, state } = await startBuilt(dir);
    const run = await runtime.run({ message: "go" });
    expect((await state.listToolCalls(run.runId)).find((call) => call.toolName === "lookup")!.output).toEqual({ available: false });

    for (const resources of [[], null, "db"]) {
      await expect(startBuilt(dir, { resources: resources as never })).rejects.toMatchObject({
        code: "AL_ERR_RUNTIME_RESOURCES",
        message: expect.stringContaining("RuntimeOptions.resources"),
      });
    }
  });
});
