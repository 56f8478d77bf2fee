import { AssemblyLineError, type SubagentRequest } from "@assemblyline-agents/core";

const REQUEST_FIELDS = ["name", "task", "expectedOutput", "constraints"];

/**
 * A spawn request's fields as the types say. A field nothing reads (`expectedOuput`) is refused,
 * never dropped: the spawn would otherwise go on without the schema or limits its caller meant.
 */
export function checkSubagentRequest(request: SubagentRequest): void {
  const refuse = (problem: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_SUBAGENT_INPUT", `spawnSubagent: ${problem}`, { fix });
  };
  if (typeof request !== "object" || request === null || Array.isArray(request)) {
    refuse(`the request must be an object, not ${describe(request)}`, 'Call ctx.spawnSubagent({ name: "researcher", task: "..." }).');
  }
  const unknown = Object.keys(request).filter((key) => !REQUEST_FIELDS.includes(key));
  if (unknown.length > 0) {
    refuse(`unknown field${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`, `Use only ${REQUEST_FIELDS.join(", ")}.`);
  }
  const { name, task, expectedOutput, constraints } = request as unknown as Record<string, unknown>;
  if (typeof name !== "string") refuse(`name must be a string, not ${describe(name)}`, 'Name a folder under subagents/: name: "researcher".');
  if (typeof task !== "string" || task.trim() === "") {
    refuse(typeof task === "string" ? "task is blank" : `task must be a string, not ${describe(task)}`, "Give the subagent a self-contained task as text.");
  }
  if (expectedOutput !== undefined && typeof expectedOutput !== "string" && (typeof expectedOutput !== "object" || expectedOutput === null || Array.isArray(expectedOutput))) {
    refuse(`expectedOutput must be a JSON Schema object or a text description, not ${describe(expectedOutput)}`, 'Pass expectedOutput: { type: "object", ... } or "a list of links", or leave it out.');
  }
  if (constraints !== undefined && !(Array.isArray(constraints) && constraints.every((line) => typeof line === "string"))) {
    refuse(`constraints must be a list of strings, not ${describe(constraints)}`, 'Pass constraints: ["be brief"], or leave it out.');
  }
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}
