import type { JsonValue, ModelToolCall } from "@assemblyline-agents/core";
import { describeSchemaErrors } from "../schema.js";
import type { RunScope } from "./run-scope.js";
import { activateTools } from "./tool-activation.js";
import { firstLine } from "./tool-search.js";
import { declaredSideEffect, type ToolTableEntry } from "./tool-table.js";

const DEFAULT_SEARCH_LIMIT = 5;

/**
 * tool_call is not executed: the pipeline replaces it by the call it names,
 * under the same call id, so that call takes the whole pipeline (policy,
 * schema, approval bound to it, idempotency keys, replay) and every event
 * names the inner tool.
 */
export type BridgeUnwrap = { call: ModelToolCall; via: "tool_call" | null } | { refusal: { error: string; problems?: string[] } };

export function unwrapToolCall(scope: RunScope, call: ModelToolCall): BridgeUnwrap {
  const bridge = scope.table.get(call.name);
  if (call.name !== "tool_call" || !bridge?.bridge || !scope.visible.has("tool_call")) return { call, via: null };
  if (!bridge.validateInput(call.input)) {
    const problems = describeSchemaErrors(bridge.validateInput.errors);
    return { refusal: { error: `Invalid input for tool_call: ${problems.join("; ")}. Pass { "name": "<tool>", "input": { ... } }.`, problems } };
  }
  const { name, input } = call.input as { name: string; input: JsonValue };
  const target = scope.table.resolve(name);
  if (target?.bridge) return { refusal: { error: `tool_call cannot call ${target.name}; call it directly.` } };
  return { call: { id: call.id, name: target?.name ?? name, input }, via: "tool_call" };
}

/**
 * Whether tool_call may reach a tool the run was not offered: deferred ones only, and only those this
 * host can run (a sandbox tool without a sandbox adapter is refused by name, as a direct call is).
 */
export function reachableThroughBridge(scope: RunScope, entry: ToolTableEntry): boolean {
  return scope.visible.has(entry.name) || (entry.visibility === "deferred" && !entry.bridge && entry.available);
}

/** Why the model cannot use a tool that exists, or null when it can. */
export function unreachableReason(entry: ToolTableEntry): string | null {
  if (entry.visibility === "hidden") return null;
  if (entry.visibility === "skill") return `Tool "${entry.name}" is available only while a skill that names it is active.`;
  if (!entry.available) return `Tool "${entry.name}" needs a sandbox, and this host has no sandbox adapter.`;
  return null;
}

/** tool_search and tool_describe, answered by the runtime; their results are journaled like any tool's. */
export async function runBridgeTool(scope: RunScope, entry: ToolTableEntry, input: JsonValue): Promise<JsonValue> {
  if (entry.name === "tool_search") {
    const { query, limit } = input as { query: string; limit?: number };
    const results = scope.table.search(query, limit ?? DEFAULT_SEARCH_LIMIT);
    return {
      query,
      results: results as unknown as JsonValue,
      ...(results.length === 0 ? { hint: "No deferred tool matches; try other words, a namespace or a tag." } : {}),
    };
  }
  if (entry.name === "tool_describe") {
    const { name } = input as { name: string };
    const target = scope.table.resolve(name);
    const reachable = target && target.mode !== "disabled" && target.available && reachableThroughBridge(scope, target);
    if (!target || !reachable) {
      const why = target ? unreachableReason(target) : null;
      const suggestions = scope.table.search(name, 3).map((hit) => hit.name);
      return { error: why ?? `No tool "${name}". Search with tool_search.`, ...(suggestions.length ? { didYouMean: suggestions } : {}) };
    }
    // Described tools are offered directly from now on, durably for the run; a discovery tool is described
    // as it is (one the model can describe is already offered, and it is never activated).
    if (!target.bridge) await activateTools(scope, [target.name], "tool_describe");
    return {
      name: target.name,
      description: target.definition.description,
      summary: firstLine(target.definition.description),
      inputSchema: target.definition.inputSchema as JsonValue,
      outputSchema: (target.definition.outputSchema ?? null) as JsonValue,
      namespace: target.namespace,
      tags: target.tags,
      aliases: target.aliases,
      execution: target.execution,
      needsApproval: target.approval !== false,
      sideEffect: declaredSideEffect(target.definition),
    };
  }
  return { error: `${entry.name} is not answered by the runtime.` };
}
