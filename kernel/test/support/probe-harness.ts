import type { AgentHarness, HarnessTurnInput, JsonValue, ModelContext, ModelToolCall, ToolCallOutcome } from "@assemblyline-agents/core";

export type ProbeResponse = { text: string } | { toolCalls: Array<{ name: string; input: JsonValue }> };

/** A completed tool call whose output a test reads as the shape it expects. */
export type CompletedOutcome<Output extends JsonValue> = { status: "completed"; output: Output; isError: boolean };

/** What a tool call handed back to the model: a completed or failed call's output, nothing for a paused one. */
export function outputOf(outcome: ToolCallOutcome): JsonValue | undefined {
  return outcome.status === "paused" ? undefined : outcome.output;
}

/** What the model side saw: every context it was given and every tool result. */
export interface ProbeLog {
  contexts: ModelContext[];
  modelSpecs: string[];
  outcomes: Array<{ call: ModelToolCall; outcome: ToolCallOutcome }>;
  /** Model calls that really ran (journal misses), not replays. */
  modelCalls: number;
  /** The tool names offered at each model call that really ran. */
  offeredPerCall: string[][];
}

/**
 * A test engine that restarts its loop from the first model call on every turn,
 * relying on the runtime's journal to replay model responses and completed tool
 * calls: the strictest use of the durability contract.
 */
export function probeHarness(responses: ProbeResponse[]): AgentHarness & { log: ProbeLog } {
  const log: ProbeLog = { contexts: [], modelSpecs: [], outcomes: [], modelCalls: 0, offeredPerCall: [] };
  return {
    name: "probe",
    log,
    async runTurn(input: HarnessTurnInput, ctx) {
      // A copy: the runtime appends activated tools to the live list during the turn.
      log.contexts.push(structuredClone(input.context));
      log.modelSpecs.push(input.modelSpec);
      for (let turn = 0; ; turn++) {
        const response = await ctx.step(`model:${turn}`, () => {
          log.modelCalls += 1;
          log.offeredPerCall.push(input.context.tools.map((tool) => tool.name));
          const next = responses[turn];
          if (!next) throw new Error(`probe script exhausted at model call ${turn + 1}`);
          return next as JsonValue;
        });
        const typed = response as ProbeResponse;
        if ("text" in typed) return { status: "completed", response: { text: typed.text } };
        for (const [index, call] of typed.toolCalls.entries()) {
          const modelCall = { id: `call_${turn}_${index}`, name: call.name, input: call.input };
          const outcome = await ctx.callTool(modelCall);
          log.outcomes.push({ call: modelCall, outcome });
          if (outcome.status === "paused") {
            return { status: "paused", continuation: { version: 1, harness: "probe", agentRevision: input.agentRevision, data: { turn } } };
          }
          if (outcome.status === "failed") return { status: "completed", response: { text: outcome.output.error } };
        }
      }
    },
  };
}
