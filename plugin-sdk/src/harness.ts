import type { JsonValue } from "./json.js";
import type { ModelContext } from "./model-context.js";
import type { ModelToolCall } from "./model.js";
import type { StepOptions } from "./tool-context.js";
import type { UsageRecord } from "./state/facets.js";
import type { RuntimeLogger } from "./infrastructure.js";

/** The opaque state an engine hands back when a run pauses. */
export interface HarnessContinuation {
  /** Format version of `data`; an engine refuses versions it does not know. */
  version: number;
  /** The engine that made it. */
  harness: string;
  /** The revision it was made under. */
  agentRevision: string;
  data: JsonValue;
}

export interface HarnessTurnInput {
  runId: string;
  agentRevision: string;
  /** `provider/model`. */
  modelSpec: string;
  /**
   * The model input the context policy built. `context.tools` may grow during
   * the turn (a tool_describe or a skill activates tools): read it before each
   * model call.
   */
  context: ModelContext;
  /** Present when resuming a paused run. */
  continuation?: HarnessContinuation;
  /** Set when the run is a subagent's: its path below the root agent (`researcher`, `researcher/fact_checker`). */
  subagent?: string;
}

/**
 * What `callTool` reports. `completed` carries what the model may see;
 * `paused` means the run must pause now (return a continuation);
 * `failed` means the tool threw: end the turn, the runtime fails the run.
 */
export type ToolCallOutcome =
  | { status: "completed"; output: JsonValue; isError: boolean }
  | { status: "paused"; reason: "approval" | "input" }
  | { status: "failed"; output: { error: string } };

export interface HarnessContext {
  readonly runId: string;
  readonly signal: AbortSignal;
  /** Run a tool through the runtime's pipeline (policy, schema, approval, journal). */
  callTool(call: ModelToolCall): Promise<ToolCallOutcome>;
  /** Journal a substep: on replay the persisted result returns. */
  step<T>(key: string, fn: () => T | Promise<T>, options?: StepOptions): Promise<T>;
  /**
   * Journal one model call: a step the runtime counts against the run's budgets
   * (it refuses a call past `maxTurns`, `maxTokens`, ...); on replay the
   * persisted result returns and nothing is counted again.
   */
  modelCall<T>(key: string, fn: () => T | Promise<T>, options?: StepOptions): Promise<T>;
  /** Record a durable event. */
  emit(type: string, data?: Record<string, JsonValue>): Promise<void>;
  /** Stream a text delta to the host as it arrives (not durable). */
  textDelta(delta: string): void;
  /**
   * The text streamed so far for the reply under way is void: the engine asks the model again (its
   * provider failed part way through) and streams the reply from its start. A host that shows the
   * deltas marks the break. Optional: an engine calls it as `ctx.textRestart?.()`.
   */
  textRestart?(): void;
  /** Record a model call's usage (idempotent on `id`); the runtime adds the run, its agent, the budget's conversation and the time. */
  recordUsage(usage: Omit<UsageRecord, "runId" | "conversationId" | "createdAt" | "agentId">): Promise<void>;
  readonly logger: RuntimeLogger;
}

export type HarnessTurnResult =
  | { status: "completed"; response: { text: string } }
  | { status: "paused"; continuation: HarnessContinuation };

/**
 * An engine. The runtime owns durability; the engine asks the model, calls tools
 * through `ctx.callTool`, journals model calls through `ctx.step`, and returns a
 * response or, when a tool call pauses, a continuation. It must not throw for a
 * tool failure (callTool reports it); a throw fails the run.
 */
export interface AgentHarness {
  readonly name: string;
  runTurn(input: HarnessTurnInput, ctx: HarnessContext): Promise<HarnessTurnResult>;
}
