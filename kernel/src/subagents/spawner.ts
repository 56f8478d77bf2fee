import {
  AssemblyLineError,
  isAssemblyLineError,
  type JsonSchema,
  type JsonValue,
  type RunRecord,
  type RunStore,
  type SubagentRequest,
} from "@assemblyline-agents/core";
import type { AgentProfile } from "../agents/agent-profile.js";
import { digestJson } from "../canonical-json.js";
import { budgetConversationOf } from "../run/budget.js";
import type { RunJournal } from "../run/journal.js";
import type { RunResult } from "../run/run-result.js";
import { compileSchema, describeSchemaErrors } from "../schema.js";
import type { SubagentLimits } from "./limits.js";
import { SubagentSuspension } from "./suspension.js";

export interface SpawnerParts {
  runs: RunStore;
  journal: RunJournal;
  limits: SubagentLimits;
  /** Drive a run to its next resting state (waits for a drive of it already in this process). */
  drive(runId: string): Promise<RunResult>;
}

/** The child run of one spawning tool call: the same id on every replay. */
export function childRunIdFor(parentRunId: string, callId: string): string {
  return `run_sub_${digestJson([parentRunId, callId]).slice(0, 32)}`;
}

/**
 * `ctx.spawnSubagent` for one tool call of `parent`: start (or find) the child
 * run, drive it, and return its output. Idempotent per tool call, so a resume
 * or crash recovery that repeats the call finds the child instead of starting
 * another, and a finished child is never driven again.
 */
export async function spawnSubagent(parts: SpawnerParts, parent: RunRecord, profile: AgentProfile, callId: string, request: SubagentRequest): Promise<JsonValue> {
  if (typeof request !== "object" || request === null || typeof request.name !== "string" || typeof request.task !== "string" || request.task.trim() === "") {
    throw new AssemblyLineError("AL_ERR_SUBAGENT_NOT_FOUND", "spawnSubagent needs { name, task } with a non-empty task", {
      fix: 'Call ctx.spawnSubagent({ name: "researcher", task: "..." }).',
    });
  }
  const child = profile.subagents.get(request.name);
  if (!child) {
    const names = [...profile.subagents.keys()];
    throw new AssemblyLineError("AL_ERR_SUBAGENT_NOT_FOUND", `${profile.path || "this agent"} has no subagent "${request.name}"`, {
      fix: names.length ? `Use one of: ${names.join(", ")}.` : "This agent has no subagents/ folder.",
    });
  }
  const schema = outputSchemaOf(child, request);
  const childRunId = childRunIdFor(parent.id, callId);
  const existing = await parts.runs.getRun(childRunId);
  if (!existing) await startChild(parts, parent, child, callId, childRunId, request);
  // A crash between creating the child and recording it leaves the event to the replay.
  else await recordOnce(parts, parent.id, "subagent.started", callId, { childRunId, subagent: child.path, callId, task: request.task, depth: existing.input.parent?.depth ?? 1 });

  const result = await parts.drive(childRunId).catch((error: unknown) => {
    // Leased by another replica: not the parent's failure. It stays running and recovery resumes both.
    if (isAssemblyLineError(error, "AL_ERR_RUN_NOT_RESUMABLE")) throw busy(childRunId, "is leased by another process");
    throw error;
  });
  if (result.status === "waiting_approval" || result.status === "waiting_input") {
    await recordOnce(parts, parent.id, "subagent.waiting", callId, {
      childRunId,
      subagent: child.path,
      callId,
      waitingFor: result.status === "waiting_approval" ? "approval" : "input",
      pendingApprovals: (result.pendingApprovals ?? []) as unknown as JsonValue,
      question: (result.question ?? null) as unknown as JsonValue,
    });
    throw new SubagentSuspension(childRunId, result.status === "waiting_approval" ? "approval" : "input");
  }
  if (result.status === "failed") {
    await recordOnce(parts, parent.id, "subagent.completed", callId, { childRunId, subagent: child.path, callId, status: "failed", error: result.error?.message ?? "failed" });
    throw new AssemblyLineError("AL_ERR_SUBAGENT_FAILED", `subagent ${child.path} (run ${childRunId}) failed: ${result.error?.message ?? "unknown error"}`, {
      fix: `See \`assembly-line runs show ${childRunId}\`.`,
    });
  }
  if (result.status !== "completed") {
    throw busy(childRunId, `is ${result.status}`);
  }
  const text = result.response?.text ?? "";
  const output = checkOutput(child, childRunId, text, schema);
  await recordOnce(parts, parent.id, "subagent.completed", callId, { childRunId, subagent: child.path, callId, status: "completed", output });
  return { subagent: child.path, runId: childRunId, output };
}

async function startChild(parts: SpawnerParts, parent: RunRecord, child: AgentProfile, callId: string, childRunId: string, request: SubagentRequest): Promise<void> {
  const depth = (parent.input.parent?.depth ?? 0) + 1;
  if (depth > parts.limits.maxDepth) {
    throw new AssemblyLineError("AL_ERR_SUBAGENT_LIMIT", `spawning ${child.path} would nest subagents ${depth} deep; the limit is ${parts.limits.maxDepth}`, {
      fix: "Do the work here instead of delegating again, or raise subagents.maxDepth (ASSEMBLY_LINE_SUBAGENT_MAX_DEPTH).",
    });
  }
  const started = (await parts.runs.listEvents(parent.id)).filter((event) => event.type === "subagent.started");
  if (started.length >= parts.limits.maxSpawnsPerRun) {
    throw new AssemblyLineError("AL_ERR_SUBAGENT_LIMIT", `run ${parent.id} already spawned ${started.length} subagents; the limit is ${parts.limits.maxSpawnsPerRun}`, {
      fix: "Finish with what the subagents returned, or raise subagents.maxSpawnsPerRun (ASSEMBLY_LINE_SUBAGENT_MAX_SPAWNS).",
    });
  }
  const sandboxRunId = child.workspace === "shared" ? (parent.input.parent?.sandboxRunId ?? parent.id) : childRunId;
  const { run, created } = await parts.runs.createRun({
    id: childRunId,
    agentId: child.agentId,
    agentRevision: parent.agentRevision,
    // One conversation per subagent per parent conversation: a follow-up spawn sees the earlier exchanges.
    conversationId: `${parent.conversationId ?? parent.id}/subagents/${child.path}`,
    modelSpec: child.modelInherited ? parent.modelSpec : child.model,
    input: {
      message: composeTask(request),
      metadata: {},
      parent: { runId: parent.id, callId, subagent: child.path, depth, sandboxRunId, budgetConversationId: budgetConversationOf(parent) },
    },
    idempotencyKey: `subagent:${childRunId}`,
  });
  if (created) await parts.journal.observe(run.id);
  await recordOnce(parts, parent.id, "subagent.started", callId, { childRunId, subagent: child.path, callId, task: request.task, depth });
}

function composeTask(request: SubagentRequest): string {
  const parts = [request.task.trim()];
  if (request.constraints?.length) parts.push(`Constraints:\n${request.constraints.map((line) => `- ${line}`).join("\n")}`);
  if (typeof request.expectedOutput === "string" && request.expectedOutput.trim()) parts.push(`Expected output: ${request.expectedOutput.trim()}`);
  else if (request.expectedOutput && typeof request.expectedOutput === "object") parts.push(`Reply with JSON only, matching this JSON Schema:\n${JSON.stringify(request.expectedOutput)}`);
  return parts.join("\n\n");
}

/** The schema the child's final output must match: the spawn's expectedOutput schema, else the subagent's outputSchema. */
function outputSchemaOf(child: AgentProfile, request: SubagentRequest): JsonSchema | null {
  if (request.expectedOutput && typeof request.expectedOutput === "object") {
    try {
      compileSchema(request.expectedOutput);
    } catch (error) {
      throw new AssemblyLineError("AL_ERR_SUBAGENT_OUTPUT", `expectedOutput is not a valid JSON Schema: ${(error as Error).message}`, {
        fix: "Pass a JSON Schema object, or a string describing the output.",
      });
    }
    return request.expectedOutput;
  }
  return child.outputSchema;
}

function checkOutput(child: AgentProfile, childRunId: string, text: string, schema: JsonSchema | null): JsonValue {
  if (!schema) return text;
  let value: unknown;
  try {
    value = JSON.parse(stripFence(text));
  } catch {
    throw new AssemblyLineError("AL_ERR_SUBAGENT_OUTPUT", `subagent ${child.path} (run ${childRunId}) replied with text that is not JSON, but its output must match a schema: ${text.slice(0, 200)}`, {
      fix: "Spawn it again asking for JSON only.",
      details: { childRunId },
    });
  }
  const validate = compileSchema(schema);
  if (!validate(value)) {
    const problems = describeSchemaErrors(validate.errors).map((line) => line.replace(/^input/, "output"));
    throw new AssemblyLineError("AL_ERR_SUBAGENT_OUTPUT", `subagent ${child.path} (run ${childRunId}) output does not match its schema: ${problems.join("; ")}`, {
      fix: "Spawn it again with a clearer task, or correct the schema.",
      details: { childRunId, problems },
    });
  }
  return value as JsonValue;
}

function stripFence(text: string): string {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/.exec(text);
  return fenced ? fenced[1]! : text;
}

/** Record a parent event once per tool call (and per child pause for `subagent.waiting`), so replays add nothing. */
async function recordOnce(
  parts: SpawnerParts,
  parentRunId: string,
  type: "subagent.started" | "subagent.completed" | "subagent.waiting",
  callId: string,
  data: Record<string, JsonValue>,
): Promise<void> {
  const events = await parts.runs.listEvents(parentRunId);
  const same = events.filter((event) => event.type === type && event.data.callId === callId);
  if (type === "subagent.waiting") {
    // A new pause of the child (another approval) is worth a new event; a replay of the same one is not.
    const key = digestJson([data.pendingApprovals, data.question]);
    if (same.some((event) => digestJson([event.data.pendingApprovals, event.data.question]) === key)) return;
  } else if (same.length > 0) {
    return;
  }
  try {
    await parts.journal.record(parentRunId, type, data);
  } catch (error) {
    if (isAssemblyLineError(error, "AL_ERR_EVENT_SEQ")) return;
    throw error;
  }
}

function busy(childRunId: string, why: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SUBAGENT_BUSY", `subagent run ${childRunId} ${why}; the parent waits for it`, {
    fix: "Nothing to do: recovery resumes the child, then the parent.",
  });
}
