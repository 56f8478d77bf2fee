import { defineTool, isAssemblyLineError, type JsonSchema, type JsonValue } from "@assemblyline-agents/core";

/** Refusals the model can act on: another name, fewer spawns, a clearer task. */
const RECOVERABLE = new Set(["AL_ERR_SUBAGENT_INPUT", "AL_ERR_SUBAGENT_NOT_FOUND", "AL_ERR_SUBAGENT_LIMIT", "AL_ERR_SUBAGENT_OUTPUT", "AL_ERR_SUBAGENT_FAILED"]);

interface SpawnInput {
  name: string;
  task: string;
  expectedOutput?: string | JsonSchema;
  constraints?: string[];
}

/**
 * Delegate to a compiled subagent. The child is a durable run of its own; this
 * call waits for it (across pauses and crashes) and returns its output.
 */
export const spawnSubagentTool = defineTool<SpawnInput, JsonValue>({
  description: "Delegate a task to one of your subagents (see the Subagents catalog) and wait for its output. Give a self-contained task; expectedOutput may be a JSON Schema the output must match.",
  inputSchema: {
    type: "object",
    properties: {
      name: { type: "string", minLength: 1 },
      task: { type: "string", minLength: 1, pattern: "\\S" },
      expectedOutput: { type: ["string", "object"] } as JsonSchema,
      constraints: { type: "array", items: { type: "string" } },
    },
    required: ["name", "task"],
    additionalProperties: false,
  },
  sideEffect: "none",
  capability: { execution: "direct" },
  async execute(input, ctx) {
    try {
      return await ctx.spawnSubagent(input);
    } catch (error) {
      if (isAssemblyLineError(error) && RECOVERABLE.has(error.code)) return { error: error.message, code: error.code };
      throw error;
    }
  },
});
