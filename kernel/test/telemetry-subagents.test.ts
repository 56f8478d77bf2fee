import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { TelemetrySpan } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger } from "@assemblyline-agents/runtime";
import { agentFolder, toolSource } from "./support/agent-folder.js";

/** A root agent on a scripted model with a researcher subagent, which has a fact_checker of its own. */
function researchAgent(script: object, lookupNeedsApproval: boolean): string {
  const dir = agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname });
`,
    "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Looks facts up." });
`,
    "subagents/researcher/tools/lookup.ts": toolSource({ upFront: true, ...(lookupNeedsApproval ? { extra: 'needsApproval: approvalRequired("The archive is billed per lookup."),' } : {}) }),
    "subagents/researcher/subagents/fact_checker/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Checks a fact." });
`,
  });
  writeFileSync(join(dir, "script.json"), JSON.stringify(script));
  return dir;
}

/** Each `start()` is a process of its own on one store, with its own sink. */
async function processes(dir: string) {
  const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
  const state = new InMemoryStateAdapter();
  const spans: TelemetrySpan[] = [];
  const start = () => new OpenEveRuntime({ ...bundle, state, logger: noopLogger(), telemetry: { export: (span) => void spans.push(span) } });
  return { start, spans, agentId: bundle.manifest.agent.id };
}

const one = (spans: TelemetrySpan[], name: string) => {
  const found = spans.filter((span) => span.name === name);
  expect(found, name).toHaveLength(1);
  return found[0]!;
};

describe("a subagent's run in telemetry", () => {
  it("joins its parent's trace under the spawning call, named as the subagent, also when it pauses and another process finishes it", async () => {
    const script = {
      turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "researcher", task: "Find the answer." }, id: "call_spawn" }] }, { text: "Reported." }],
      subagents: { researcher: { turns: [{ toolCalls: [{ name: "lookup", input: { value: "answer" }, id: "call_lookup" }] }, { text: "42" }] } },
    };
    const { start, spans, agentId } = await processes(researchAgent(script, true));
    const first = start();
    const paused = await first.run({ message: "go" });
    expect(paused.status).toBe("waiting_approval");
    await first.close();
    const second = start();
    expect((await second.approve(paused.runId)).status).toBe("completed");
    await second.close();

    const root = one(spans, `invoke_agent ${second.manifest.agent.name}`);
    expect(root.parentSpanId).toBeUndefined();
    const spawn = one(spans, "execute_tool spawn_subagent");
    const researcher = one(spans, "invoke_agent researcher");
    expect(researcher.attributes).toMatchObject({ "gen_ai.agent.id": `${agentId}/researcher`, "gen_ai.agent.name": "researcher" });
    expect(researcher.parentSpanId).toBe(spawn.spanId);
    expect(researcher.startTimeMs).toBeGreaterThanOrEqual(spawn.startTimeMs);
    expect(researcher.endTimeMs).toBeLessThanOrEqual(spawn.endTimeMs);
    // One trace for the whole conversation turn, whichever run and process made each span.
    expect(new Set(spans.map((span) => span.traceId))).toEqual(new Set([root.traceId]));
    const lookup = one(spans, "execute_tool lookup");
    expect(lookup.parentSpanId).toBe(researcher.spanId);
    expect(lookup.attributes["assembly_line.tool.approval"]).toBe("granted");
    for (const span of spans.filter((item) => item.attributes["assembly_line.run.id"] === researcher.attributes["assembly_line.run.id"] && item !== researcher)) {
      expect(span.parentSpanId).toBe(researcher.spanId);
    }
  });

  it("a subagent's subagent joins the top run's trace, under its own parent's spawning call", async () => {
    const script = {
      turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "researcher", task: "Find it." }, id: "call_root_spawn" }] }, { text: "Reported." }],
      subagents: {
        researcher: {
          turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "fact_checker", task: "Check it." }, id: "call_nested_spawn" }] }, { text: "Checked." }],
          subagents: { fact_checker: { turns: [{ text: "True." }] } },
        },
      },
    };
    const { start, spans, agentId } = await processes(researchAgent(script, false));
    const runtime = start();
    expect((await runtime.run({ message: "go" })).status).toBe("completed");
    await runtime.close();

    const root = one(spans, `invoke_agent ${runtime.manifest.agent.name}`);
    const researcher = one(spans, "invoke_agent researcher");
    const checker = one(spans, "invoke_agent fact_checker");
    expect(checker.attributes["gen_ai.agent.id"]).toBe(`${agentId}/researcher/fact_checker`);
    const nestedSpawn = spans.find((span) => span.attributes["gen_ai.tool.call.id"] === "call_nested_spawn")!;
    expect(nestedSpawn.parentSpanId).toBe(researcher.spanId);
    expect(checker.parentSpanId).toBe(nestedSpawn.spanId);
    expect(new Set(spans.map((span) => span.traceId))).toEqual(new Set([root.traceId]));
  });
});
