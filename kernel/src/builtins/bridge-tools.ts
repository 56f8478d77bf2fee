import { AssemblyLineError, defineTool, type JsonSchema } from "@assemblyline-agents/core";

/** Runtime-handled tools: they have a model-facing shape but no wrappable executor. */
function runtimeHandled(name: string, description: string, properties: Record<string, JsonSchema>, required: string[]) {
  return defineTool({
    description,
    inputSchema: { type: "object", properties, required, additionalProperties: false },
    capability: { visibility: "hidden" },
    execute() {
      throw new AssemblyLineError("AL_ERR_HARNESS", `${name} is handled by the runtime and has no executor to call or wrap`, {
        fix: `Override tools/${name}.ts wholesale instead of wrapping builtInToolDefaults.${name}.`,
      });
    },
  });
}

export const toolSearchTool = runtimeHandled("tool_search", "Search the deferred tool catalog.", { query: { type: "string" } }, ["query"]);
export const toolDescribeTool = runtimeHandled("tool_describe", "Describe a deferred tool's input schema.", { name: { type: "string" } }, ["name"]);
export const toolCallTool = runtimeHandled("tool_call", "Call a deferred tool by name.", { name: { type: "string" }, input: { type: "object" } }, ["name", "input"]);

