import { AssemblyLineError, RESERVED_EVENT_NAMESPACES, isReservedEventType, type ConnectionManager, type JsonValue, type ToolExecutionContext } from "@assemblyline-agents/core";
import { digestJson } from "../canonical-json.js";
import { RUNTIME_FILESYSTEM } from "../filesystem/context-access.js";
import { findNonJson } from "../json-check.js";
import { changeGate, type ChangeApprovalSuspension } from "./change-approval.js";
import { QuestionSuspension, questionProblem } from "./question.js";
import { SKILL_ACTIVATION } from "./run-access.js";
import { spawningCallSignal } from "../subagents/parent-paused.js";
import { isSubagentSuspension, type SubagentSuspension } from "../subagents/suspension.js";
import type { SkillStepRunner } from "../skills/durable-skill-change.js";
import { dropUndefined } from "./journal.js";
import type { RunScope } from "./run-scope.js";
import { ENGINE_STEP_PREFIX, runStep } from "./step.js";

/** A stable dedupe key per run, tool call and scope. */
export function idempotencyKeyFor(runId: string, toolCallId: string, scope: string): string {
  return `al_${digestJson([runId, toolCallId, scope]).slice(0, 40)}`;
}

/** What one execution of a tool call asked for through its ctx, and whether the run stopped waiting for it. */
export interface CallAsks {
  question?: QuestionSuspension;
  subagent?: SubagentSuspension;
  approval?: ChangeApprovalSuspension;
  /** The abort reason the run stopped waiting for the call with (tool-pipeline.ts unlessRunStops). */
  stopped?: unknown;
  /** Set once the call's execute has returned or thrown: a subagent it left running in the background has no replay of it to drive it on. */
  returned?: boolean;
}

/** What one tool call's `execute(input, ctx)` receives. */
export function createToolContext(
  scope: RunScope,
  call: { id: string; name: string },
  approvedToolCall: boolean,
  asked: CallAsks,
  /** The change this call's last approval showed (change-approval.ts). */
  approvedChange?: JsonValue,
): ToolExecutionContext {
  const { services } = scope;
  const gate = (required: boolean) => changeGate(approvedToolCall, required, approvedChange, (suspension) => (asked.approval ??= suspension));
  let spawns = 0;
  // Made at the call's first spawn: most calls spawn nothing.
  let spawnSignal: AbortSignal | undefined;
  // After a question, or a spawn whose subagent pauses, the call pauses when execute returns: a tool that
  // caught that throw and went on would act (record, spawn, run a step) on work that is to happen
  // only after the answer. Its ctx refuses with the same suspension: code after the pause does nothing durable.
  // A call the run stopped waiting for does nothing durable either: its run has moved on without it.
  const refuseWhilePaused = (): void => {
    if (asked.stopped !== undefined) throw asked.stopped;
    const pending = asked.question ?? asked.subagent;
    if (pending) throw pending;
  };
  // The steps the managers and the skill writes make their changes in: checked again at each, so a
  // change whose checks (a connection's describe) outlasted the run's wait for the call is not written.
  const guardedStep: SkillStepRunner = (key, fn) => {
    refuseWhilePaused();
    return runStep(scope, key, fn);
  };
  const perCall = services.forCall?.({ id: call.id, approved: approvedToolCall, step: guardedStep });
  const filesystem = perCall?.filesystem ?? services.filesystem;
  const selfImprovement = perCall ? perCall.selfImprovement : services.selfImprovement;
  /**
   * `api` with each of `writes` refused as the other members are once the call is paused or stopped. A view of
   * `api`, not a copy: a store that is a class instance (a plugin's BlobStore) keeps its methods and private fields,
   * each called with the store as `this`. The proxy's target is an empty object, never `api`: a proxy must report a
   * frozen target's methods as they are, so one over a frozen store could hand out no guarded or bound method.
   */
  const guarded = <T extends object>(api: T, writes: ReadonlyArray<keyof T & string>): T => {
    const refused = new Set<PropertyKey>(writes);
    const member = (name: PropertyKey): unknown => {
      const value: unknown = Reflect.get(api, name, api);
      if (typeof value !== "function") return value;
      const method = value as (...args: unknown[]) => unknown;
      if (!refused.has(name)) return method.bind(api);
      return async (...args: unknown[]) => {
        refuseWhilePaused();
        return method.apply(api, args);
      };
    };
    return new Proxy(Object.create(null) as T, {
      get: (_, name) => member(name),
      set: (_, name, value) => Reflect.set(api, name, value, api),
      has: (_, name) => Reflect.has(api, name),
      ownKeys: () => Reflect.ownKeys(api),
      // Configurable whatever the store says: the empty target has no such property to match.
      getOwnPropertyDescriptor: (_, name) => {
        const own = Reflect.getOwnPropertyDescriptor(api, name);
        return own && { value: member(name), writable: own.writable ?? false, enumerable: own.enumerable ?? false, configurable: true };
      },
      getPrototypeOf: () => Reflect.getPrototypeOf(api),
    });
  };
  return {
    runId: scope.runId,
    agentRevision: scope.agentRevision,
    toolCallId: call.id,
    toolName: call.name,
    approvedToolCall,
    signal: scope.signal,
    async askQuestion(question, options) {
      refuseWhilePaused();
      // Checked here, where the tool can still catch it: the store would refuse the question only once the run pauses.
      const problem = questionProblem(question, options);
      if (problem) {
        throw new AssemblyLineError("AL_ERR_TOOL_OUTPUT", problem, { fix: "Ask a string question; pass choices as an array of strings and metadata as plain JSON." });
      }
      const suspension = new QuestionSuspension(question, options);
      // Remembered so a tool that catches the throw still pauses the run.
      asked.question = suspension;
      throw suspension;
    },
    async emit(eventType, data = {}) {
      refuseWhilePaused();
      if (typeof eventType !== "string" || eventType === "" || isReservedEventType(eventType)) {
        throw new AssemblyLineError("AL_ERR_EVENT_TYPE_RESERVED", `ctx.emit("${String(eventType)}"): that event type is reserved or empty`, {
          fix: `Use your own namespaced type, e.g. "note.recorded"; the runtime records the events of ${RESERVED_EVENT_NAMESPACES.map((name) => `${name}.`).join(", ")}.`,
        });
      }
      // A key whose value is undefined is left out, as JSON.stringify leaves it (the type allows it); nothing else non-JSON is.
      const recorded = typeof data === "object" && data !== null && !Array.isArray(data) ? dropUndefined(data) : data;
      const problem = findNonJson(recorded, `ctx.emit("${eventType}") data`);
      if (problem) throw new AssemblyLineError("AL_ERR_TOOL_OUTPUT", problem, { fix: "Pass plain JSON data to ctx.emit." });
      await scope.journal.record(scope.runId, eventType, { ...(recorded as Record<string, JsonValue>), toolCallId: call.id });
    },
    idempotencyKey(keyScope) {
      return idempotencyKeyFor(scope.runId, call.id, keyScope);
    },
    step(key, fn, options) {
      // The engine's steps (its model calls) share the run's keys as `harness:<key>`: a tool's step
      // under that prefix would replay the engine's result, or hand the engine the tool's.
      if (typeof key === "string" && key.startsWith(ENGINE_STEP_PREFIX)) {
        throw new AssemblyLineError("AL_ERR_STEP_RESULT", `ctx.step("${key}"): keys starting with "${ENGINE_STEP_PREFIX}" are the engine's`, {
          fix: "Name the substep by what it does, e.g. `hydrate-customer:${id}`.",
        });
      }
      refuseWhilePaused();
      return runStep(scope, key, fn, options);
    },
    getSandbox: async () => {
      refuseWhilePaused();
      return services.getSandbox();
    },
    // Durable writes, refused as ctx.emit is once the run stopped waiting for the call: an approved replay, or the
    // replica that took a lost lease over, makes them again.
    ...(services.blob ? { blob: guarded(services.blob, ["put", "delete"]) } : {}),
    ...(services.memory ? { memory: guarded(services.memory, ["write", "delete"]) } : {}),
    ...(services.resources ? { resources: services.resources } : {}),
    async spawnSubagent(request) {
      refuseWhilePaused();
      // Numbered as called, so each spawn of one execution has its own child, found again on a replay.
      const spawnIndex = spawns++;
      try {
        // The run's signal, as this call's: the child stops when the parent stops (spawner.ts driveUnder), left
        // for the replay of the call only while execute still runs.
        spawnSignal ??= spawningCallSignal(scope.signal, () => asked.returned !== true);
        return await services.spawnSubagent(request, call.id, spawnIndex, spawnSignal);
      } catch (error) {
        // Remembered so a tool that catches it still pauses until the child finishes.
        if (isSubagentSuspension(error)) asked.subagent = error;
        throw error;
      }
    },
    connections: services.connections ?? {},
    ...(services.automationManager ? { automationManager: guarded(services.automationManager(gate, { step: guardedStep, prefix: `automation-change:${call.id}` }), ["create", "update", "delete"]) } : {}),
    ...(services.connectionManager
      ? { connectionManager: guarded(services.connectionManager(gate, { step: guardedStep, prefix: `connection-change:${call.id}` }) as ConnectionManager, ["add", "remove"]) }
      : {}),
    ...(selfImprovement ? { selfImprovement: guarded(selfImprovement, ["create", "update", "delete"]) } : {}),
    ...(scope.channel ? { channel: scope.channel } : {}),
    // The built-in file tools' writes reach memory, /files and /skills, as durable as ctx.memory's.
    [RUNTIME_FILESYSTEM]: guarded(filesystem, ["write", "delete"]),
    [SKILL_ACTIVATION]: scope.skills,
  } as ToolExecutionContext;
}
