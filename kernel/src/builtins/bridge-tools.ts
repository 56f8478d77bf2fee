import { AssemblyLineError, defineTool, type JsonSchema } from "@assemblyline-agents/core";

/**
 * Runtime-handled tools: they have a model-facing shape but no wrappable
 * executor. The tool pipeline answers tool_search and tool_describe itself and
 * unwraps tool_call into the call it names (run/bridge-tools.ts).
 */
function runtimeHandled(name: string, description: string, properties: Record<string, JsonSchema>, required: string[]) {
  return defineTool({
    description,
    inputSchema: { type: "object", properties, required, additionalProperties: false },
    sideEffect: "none",
    capability: { execution: "direct" },
    execute() {
      throw new AssemblyLineError("AL_ERR_HARNESS", `${name} is handled by the runtime and has no executor to call or wrap`, {
        fix: `Override tools/${name}.ts wholesale instead of wrapping builtInToolDefaults.${name}.`,
      });
    },
  });
}

export const toolSearchTool = runtimeHandled(
  "tool_search",
  "Search the catalog of tools that are not offered up front. Returns the best matches by name, alias, namespace, tag and description; describe one with tool_describe, then call it directly or with tool_call.",
  {
    query: { type: "string", minLength: 1, description: "What you need to do, in a few words (e.g. 'create invoice')." },
    limit: { type: "integer", minimum: 1, maximum: 20, description: "At most this many results (default 5)." },
  },
  ["query"],
);

export const toolDescribeTool = runtimeHandled(
  "tool_describe",
  "Show a tool's full description and input schema by name (or alias). The tool is then offered directly for the rest of the run.",
  { name: { type: "string", minLength: 1 } },
  ["name"],
);

export const toolCallTool = runtimeHandled(
  "tool_call",
  "Call a tool found with tool_search by name, with input matching its schema (see tool_describe). Approval gates and checks apply as for a direct call.",
  { name: { type: "string", minLength: 1 }, input: { type: "object" } },
  ["name", "input"],
);
