import type { RunCapabilityDeclaration } from "@assemblyline-agents/core";

const FIELDS = ["model", "instructions", "defaultTools"];

/**
 * What is wrong with what a resolver returned, or null when it is a declaration (or null to keep the
 * authored defaults). A misspelled key (`defaultTool`) would otherwise be ignored, and the run start
 * with every default tool the resolver meant to take away.
 */
export function declarationProblem(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== "object" || Array.isArray(value)) return `it returned ${describe(value)}, not { model?, instructions?, defaultTools? } or null`;
  const declaration = value as Record<string, unknown>;
  const unknown = Object.keys(declaration).filter((key) => !FIELDS.includes(key));
  if (unknown.length > 0) return `it returned the unknown field${unknown.length === 1 ? "" : "s"} ${unknown.join(", ")} (the fields are ${FIELDS.join(", ")})`;
  const { model, instructions, defaultTools } = declaration as { [K in keyof RunCapabilityDeclaration]?: unknown };
  if (model !== undefined && (typeof model !== "string" || model.trim() === "")) return `model is ${describe(model)}, not a model name such as "openai/gpt-5"`;
  if (instructions !== undefined && typeof instructions !== "string") return `instructions is ${describe(instructions)}, not a string`;
  if (defaultTools !== undefined && !(Array.isArray(defaultTools) && defaultTools.every((name) => typeof name === "string"))) return `defaultTools is ${describe(defaultTools)}, not an array of tool names`;
  return null;
}

function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}...` : value);
  if (Array.isArray(value)) return "an array";
  return value === null ? "null" : typeof value === "object" ? "an object" : String(value);
}
