import {
  AssemblyLineError,
  isAssemblyLineError,
  type JsonSchema,
  type JsonValue,
  type RunBudgets,
  type RunRecord,
  type RunStore,
  type SubagentParent,
  type SubagentRequest,
  type UsageStore,
} from "@assemblyline-agents/core";
import type { AgentProfile } from "../agents/agent-profile.js";
import { digestJson } from "../canonical-json.js";
import { DELEGATED_BUDGETS, budgetConversationOf, extendedLimits, narrowedLimits, spentByRun } from "../run/budget.js";
import type { RunJournal } from "../run/journal.js";
import type { RunResult } from "../run/run-result.js";
import { compileSchema, describeSchemaErrors } from "../schema.js";
import type { SubagentLimits } from "./limits.js";
import { parentPausedStop, pausesRun, spawningCallExecuting } from "./parent-paused.js";
import { checkSubagentRequest } from "./request.js";
import { SubagentSuspension } from "./suspension.js";

export interface SpawnerParts {
  runs: RunStore;
  journal: RunJournal;
  limits: SubagentLimits;
  /**
   * Spawns under way per parent run, counted before their child is recorded: spawns made at once
   * (parallel calls, Promise.all in a tool) would each count only the started events before them.
   * One process drives a parent run (its lease), so a count in memory sees all of them.
   */
  spawning: Map<string, Set<string>>;
  /**
   * Drive a run to its next resting state (waits for a drive of it already in this process).
   * `signal` stops it as a caller's abort stops a run: it fails with the abort's reason, unless that
   * reason is the spawner's parent-paused stop for it (parent-paused.ts), which leaves it as a crash does. `resumed`: the run was
   * left part-way (a crash, its parent's pause), recorded as a resume so the time it stood still is not
   * counted in its own maxDurationMs.
   */
  drive(runId: string, options?: { signal?: AbortSignal; resumed?: boolean }): Promise<RunResult>;
  /** Model usage: what a child spent is recorded on the parent, and what the parent has left bounds the next child. */
  usage: UsageStore;
  /** The spawning run's budgets, as its agent resolves them (before its own narrowing and extensions). */
  budgets: RunBudgets;
  /**
   * The build the spawning run is driven on, which its children start on: after `runs migrate` that is the
   * build it moved to, not the one its record names.
   */
  agentRevision: string;
}

/**
 * The child run of one spawn of a tool call (its `spawnIndex`-th, from 0): the same id on every
 * replay. The first spawn's id is the call's alone, as it was before a call could spawn several.
 */
export function childRunIdFor(parentRunId: string, callId: string, spawnIndex = 0): string {
  return `run_sub_${digestJson(spawnIndex === 0 ? [parentRunId, callId] : [parentRunId, callId, spawnIndex]).slice(0, 32)}`;
}

/** Which spawn of which tool call: the call's id, and the spawn's place among the call's spawns. */
export interface SpawnSite {
  callId: string;
  spawnIndex: number;
  /**
   * The signal of the parent's turn the call runs in (its `ctx.signal`, as the call's own: spawningCallSignal):
   * aborted when the parent stops waiting for the call. The child stops with it, and the parent's log gets
   * nothing more of the spawn.
   */
  turn?: AbortSignal;
}

/**
 * `ctx.spawnSubagent` for one tool call of `parent`: start (or find) the child
 * run, drive it, and return its output. Idempotent per tool call, so a resume
 * or crash recovery that repeats the call finds the child instead of starting
 * another, and a finished child is never driven again.
 */
export async function spawnSubagent(parts: SpawnerParts, parent: RunRecord, profile: AgentProfile, site: SpawnSite, request: SubagentRequest): Promise<JsonValue> {
  const { callId } = site;
  const record = (type: RecordedType, data: Record<string, JsonValue> & { childRunId: string }, more?: () => Promise<Record<string, JsonValue>>) =>
    recordOnce(parts, parent.id, site.turn, type, data, more);
  checkSubagentRequest(request);
  const child = profile.subagents.get(request.name);
  if (!child) {
    const names = [...profile.subagents.keys()];
    throw new AssemblyLineError("AL_ERR_SUBAGENT_NOT_FOUND", `${profile.path || "this agent"} has no subagent "${request.name}"`, {
      fix: names.length ? `Use one of: ${names.join(", ")}.` : "This agent has no subagents/ folder.",
    });
  }
  const schema = outputSchemaOf(child, request);
  const childRunId = childRunIdFor(parent.id, callId, site.spawnIndex);
  const existing = await parts.runs.getRun(childRunId);
  if (existing && existing.input.parent?.subagent !== child.path) {
    throw new AssemblyLineError("AL_ERR_SUBAGENT_INPUT", `spawn ${site.spawnIndex + 1} of tool call ${callId} started subagent ${existing.input.parent?.subagent ?? "?"} (run ${childRunId}) before; now it asks for ${child.path}`, {
      fix: "A tool replayed after a pause or a crash must spawn the same subagents in the same order: decide what to spawn from the tool's input, not from time or chance.",
      details: { childRunId },
    });
  }
  if (!existing) await startChild(parts, parent, child, site, childRunId, request);
  // A crash between creating the child and recording it leaves the event to the replay.
  else await record("subagent.started", { childRunId, subagent: child.path, callId, task: request.task, depth: existing.input.parent?.depth ?? 1 });

  // A child left part-way (its parent paused on maxDurationMs, or a crash) is resumed; a new one is started.
  const resumed = existing?.status === "running";
  const result = await driveUnder(parts, parent.id, childRunId, site.turn, resumed).catch((error: unknown) => {
    // Leased by another replica: not the parent's failure. It stays running and recovery resumes both.
    if (isAssemblyLineError(error, "AL_ERR_RUN_NOT_RESUMABLE")) throw busy(childRunId, "is leased by another process");
    throw error;
  });
  if (result.status === "waiting_approval" || result.status === "waiting_input") {
    await record("subagent.waiting", {
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
    await record("subagent.completed", { childRunId, subagent: child.path, callId, status: "failed", error: result.error?.message ?? "failed" }, () => spentOf(parts, childRunId));
    throw new AssemblyLineError("AL_ERR_SUBAGENT_FAILED", `subagent ${child.path} (run ${childRunId}) failed: ${result.error?.message ?? "unknown error"}`, {
      fix: `See \`assembly-line runs show ${childRunId}\`.`,
    });
  }
  if (result.status !== "completed") {
    throw busy(childRunId, `is ${result.status}`);
  }
  const text = result.response?.text ?? "";
  let output: JsonValue;
  try {
    output = checkOutput(child, childRunId, text, schema);
  } catch (error) {
    // The child ended all the same: the parent's record says so, and why its output was refused.
    await record("subagent.completed", { childRunId, subagent: child.path, callId, status: "output_invalid", error: (error as Error).message }, () => spentOf(parts, childRunId));
    throw error;
  }
  await record("subagent.completed", { childRunId, subagent: child.path, callId, status: "completed", output }, () => spentOf(parts, childRunId));
  return { subagent: child.path, runId: childRunId, output };
}

/**
 * Drive the child until it rests, stopped when the parent's turn stops: with the turn's abort reason, so the
 * child fails as a cancelled run does. A reason that only pauses the parent (its own maxDurationMs under
 * `onExceeded: "pause"`, or its parent's pause passed down to it) stops the child with a parent-paused stop of
 * its own instead, which leaves it as a crash leaves it, and the approved replay of the call drives it on: only
 * while the spawning call still executes (a child spawned in the background by a call that has returned fails
 * with the parent's stop, as no replay would come for it). Not
 * when the parent's lease moved to another replica: the child is this process's to drive still, and that
 * replica's replay of the call finds it.
 */
async function driveUnder(parts: SpawnerParts, parentRunId: string, childRunId: string, turn: AbortSignal | undefined, resumed: boolean): Promise<RunResult> {
  if (!turn) return parts.drive(childRunId, { resumed });
  const stop = new AbortController();
  const forward = () => {
    const reason: unknown = turn.reason;
    if (isAssemblyLineError(reason, "AL_ERR_RUN_LEASE_LOST")) return;
    // Left for the replay only while the spawning call still executes: one that returned is never replayed.
    const leftForReplay = pausesRun(reason, parentRunId) && spawningCallExecuting(turn);
    stop.abort(leftForReplay ? parentPausedStop(childRunId, parentRunId, reason) : reason);
  };
  if (turn.aborted) forward();
  else turn.addEventListener("abort", forward, { once: true });
  try {
    return await parts.drive(childRunId, { signal: stop.signal, resumed });
  } finally {
    turn.removeEventListener("abort", forward);
  }
}

async function startChild(parts: SpawnerParts, parent: RunRecord, child: AgentProfile, site: SpawnSite, childRunId: string, request: SubagentRequest): Promise<void> {
  const depth = (parent.input.parent?.depth ?? 0) + 1;
  if (depth > parts.limits.maxDepth) {
    throw new AssemblyLineError("AL_ERR_SUBAGENT_LIMIT", `spawning ${child.path} would nest subagents ${depth} deep; the limit is ${parts.limits.maxDepth}`, {
      fix: "Do the work here instead of delegating again, or raise subagents.maxDepth (ASSEMBLY_LINE_SUBAGENT_MAX_DEPTH).",
    });
  }
  const underWay = parts.spawning.get(parent.id) ?? new Set<string>();
  parts.spawning.set(parent.id, underWay);
  try {
    const spawned = new Set((await parts.runs.listEvents(parent.id)).filter((event) => event.type === "subagent.started").map((event) => String(event.data.childRunId)));
    // The others under way count too (not yet recorded); taken after the read, before the next await.
    for (const other of underWay) spawned.add(other);
    if (spawned.size >= parts.limits.maxSpawnsPerRun) {
      throw new AssemblyLineError("AL_ERR_SUBAGENT_LIMIT", `run ${parent.id} already spawned ${spawned.size} subagents; the limit is ${parts.limits.maxSpawnsPerRun}`, {
        fix: "Finish with what the subagents returned, or raise subagents.maxSpawnsPerRun (ASSEMBLY_LINE_SUBAGENT_MAX_SPAWNS).",
      });
    }
    underWay.add(childRunId);
    await createChild(parts, parent, child, site, childRunId, request, depth);
  } finally {
    underWay.delete(childRunId);
    if (underWay.size === 0 && parts.spawning.get(parent.id) === underWay) parts.spawning.delete(parent.id);
  }
}

async function createChild(parts: SpawnerParts, parent: RunRecord, child: AgentProfile, site: SpawnSite, childRunId: string, request: SubagentRequest, depth: number): Promise<void> {
  const { callId } = site;
  const sandboxRunId = child.workspace === "shared" ? (parent.input.parent?.sandboxRunId ?? parent.id) : childRunId;
  const { run, created } = await parts.runs.createRun({
    id: childRunId,
    agentId: child.agentId,
    agentRevision: parts.agentRevision,
    // One conversation per subagent per parent conversation: a follow-up spawn sees the earlier exchanges.
    conversationId: `${parent.conversationId ?? parent.id}/subagents/${child.path}`,
    modelSpec: child.modelInherited ? parent.modelSpec : child.model,
    input: {
      message: composeTask(request, child),
      metadata: {},
      parent: { runId: parent.id, callId, subagent: child.path, depth, sandboxRunId, budgetConversationId: budgetConversationOf(parent), ...(await budgetLeftOf(parts, parent)) },
    },
    idempotencyKey: `subagent:${childRunId}`,
  });
  if (created) await parts.journal.observe(run.id);
  await recordOnce(parts, parent.id, site.turn, "subagent.started", { childRunId, subagent: child.path, callId, task: request.task, depth });
}

/**
 * What `parent` has left of its token and cost budgets, for the child it spawns now: its limits (lowered by its
 * own parent's, grown by a human's extensions) less what it and its finished subagents spent, and the last of
 * its events counted (`budgetSeq`): its subagents still running share that ceiling with the child.
 */
async function budgetLeftOf(parts: SpawnerParts, parent: RunRecord): Promise<Pick<SubagentParent, "budgetLeft" | "budgetSeq">> {
  const narrowed = narrowedLimits(parts.budgets, parent);
  const bounded = DELEGATED_BUDGETS.filter((name) => narrowed[name] !== undefined);
  if (bounded.length === 0) return {};
  const events = await parts.runs.listEvents(parent.id);
  const limits = extendedLimits(narrowed, events);
  const spent = await spentByRun(parent.id, parts, events).catch(() => undefined);
  // Usage that cannot be read leaves the budget unchecked for now, as a model call's check does; the limit still bounds the child.
  const used = { maxTokens: spent?.tokens ?? 0, maxCostUsd: spent?.costUsd ?? 0 };
  const left: NonNullable<SubagentParent["budgetLeft"]> = {};
  for (const name of bounded) left[name] = Math.max(0, Math.round((limits[name]! - used[name]) * 1e9) / 1e9);
  return { budgetLeft: left, budgetSeq: events.at(-1)?.seq ?? 0 };
}

/** What a finished child spent, for its `subagent.completed` event; nothing when usage cannot be read (the parent then counts none). */
async function spentOf(parts: SpawnerParts, childRunId: string): Promise<Record<string, JsonValue>> {
  const spent = await spentByRun(childRunId, parts).catch(() => undefined);
  return spent ? { usage: { tokens: spent.tokens, costUsd: spent.costUsd } } : {};
}

/** The child's first message. It shows the schema its output is checked against, whether the spawn or the subagent gave it. */
function composeTask(request: SubagentRequest, child: AgentProfile): string {
  const parts = [request.task.trim()];
  if (request.constraints?.length) parts.push(`Constraints:\n${request.constraints.map((line) => `- ${line}`).join("\n")}`);
  if (typeof request.expectedOutput === "string" && request.expectedOutput.trim()) parts.push(`Expected output: ${request.expectedOutput.trim()}`);
  const schema = outputSchemaOf(child, request);
  if (schema) parts.push(`Reply with JSON only, matching this JSON Schema:\n${JSON.stringify(schema)}`);
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

type RecordedType = "subagent.started" | "subagent.completed" | "subagent.waiting";

/**
 * Record a parent event once per child run (and per child pause for `subagent.waiting`), so replays add nothing.
 * Only while the parent waits for the call: a parent whose turn stopped (`turn` aborted) recorded the call as
 * stopped and ends without it, and a parent that has ended is never written to again.
 */
async function recordOnce(
  parts: SpawnerParts,
  parentRunId: string,
  turn: AbortSignal | undefined,
  type: RecordedType,
  data: Record<string, JsonValue> & { childRunId: string },
  /** More of the event, read only when it is not recorded yet (a replay reads nothing more). */
  more?: () => Promise<Record<string, JsonValue>>,
): Promise<void> {
  let extra: Record<string, JsonValue> | undefined;
  for (;;) {
    if (turn?.aborted) return;
    const events = await parts.runs.listEvents(parentRunId);
    if (events.some((event) => event.type === "run.completed" || event.type === "run.failed")) return;
    const same = events.filter((event) => event.type === type && event.data.childRunId === data.childRunId);
    if (type === "subagent.waiting") {
      // A new pause of the child (another approval) is worth a new event; a replay of the same one is not.
      const key = digestJson([data.pendingApprovals, data.question]);
      if (same.some((event) => digestJson([event.data.pendingApprovals, event.data.question]) === key)) return;
    } else if (same.length > 0) {
      return;
    }
    extra ??= more ? await more() : {};
    if (turn?.aborted) return;
    try {
      // Onto the log as read only: the parent's end, or a call beside this one, written since is seen on the next pass.
      await parts.journal.record(parentRunId, type, { ...data, ...extra }, undefined, { expectedLastSeq: events.at(-1)?.seq ?? 0 });
      return;
    } catch (error) {
      if (!isAssemblyLineError(error, "AL_ERR_EVENT_SEQ")) throw error;
    }
  }
}

function busy(childRunId: string, why: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SUBAGENT_BUSY", `subagent run ${childRunId} ${why}; the parent waits for it`, {
    fix: "Nothing to do: recovery resumes the child, then the parent.",
  });
}
