import { types } from "node:util";
import type { ToolDefinition } from "@assemblyline-agents/core";

/**
 * What is wrong with a tool's code fields, or null: `execute` must be a function,
 * and so must `toModelOutput` when given, a synchronous one. A tool written in JavaScript (or cast
 * past the types) would otherwise build, fail at its first call, and have the
 * runtime call a toModelOutput that is a string. An async toModelOutput hands the
 * runtime a Promise, not the projection: every call of the tool would fail.
 */
export function toolFunctionProblem(definition: Pick<ToolDefinition, "execute" | "toModelOutput">): string | null {
  if (typeof definition.execute !== "function") return `execute must be a function (input, ctx) => result, not ${describe(definition.execute)}`;
  if (definition.toModelOutput !== undefined && typeof definition.toModelOutput !== "function") {
    return `toModelOutput must be a function (output) => projection, not ${describe(definition.toModelOutput)}`;
  }
  if (types.isAsyncFunction(definition.toModelOutput)) return "toModelOutput must be synchronous: it is an async function, which returns a Promise, not the projection";
  return null;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === "object") return Array.isArray(value) ? "an array" : "an object";
  return typeof value === "string" ? `the string ${JSON.stringify(value)}` : `${typeof value} ${String(value)}`;
}
