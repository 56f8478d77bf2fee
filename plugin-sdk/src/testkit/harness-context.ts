import type { HarnessContext, ToolCallOutcome } from "../harness.js";
import { noopLogger, type RuntimeLogger } from "../infrastructure.js";
import type { JsonValue } from "../json.js";
import type { ModelToolCall } from "../model.js";
import type { StepOptions } from "../tool-context.js";
import type { UsageRecord } from "../state/facets.js";

/** How the kit's tool table answers a call. */
export interface KitTool {
  run(input: JsonValue): JsonValue;
  /** Pause for approval until the tool's name is in `approved`. */
  approval?: boolean;
}

interface Journal {
  steps: Map<string, string>;
  toolResults: Map<string, ToolCallOutcome>;
}

/**
 * The runtime's side of the harness contract, small but faithful: step() and
 * modelCall() journal JSON results and return them on replay, callTool() runs a
 * tool table with an approval gate and never runs a completed call twice.
 * resume() makes the context a resumed run gets: same journal, nothing else.
 */
export class KitHarnessContext implements HarnessContext {
  readonly runId = "run_kit";
  readonly signal: AbortSignal;
  readonly logger: RuntimeLogger = noopLogger();
  readonly deltas: string[] = [];
  readonly toolCalls: ModelToolCall[] = [];
  /** Names of the tools actually executed by this context, in order. */
  readonly executed: string[] = [];
  readonly approved = new Set<string>();
  readonly events: Array<{ type: string; data: Record<string, JsonValue> }> = [];
  readonly usage: Array<Omit<UsageRecord, "runId" | "conversationId" | "createdAt" | "agentId">> = [];

  constructor(
    private readonly tools: Record<string, KitTool>,
    options: { signal?: AbortSignal; journal?: Journal } = {},
    private readonly journal: Journal = options.journal ?? { steps: new Map(), toolResults: new Map() },
  ) {
    this.signal = options.signal ?? new AbortController().signal;
  }

  /** The context a resumed run gets: the same journal; with `signal` or `tools` of its own when given. */
  resume(options: { signal?: AbortSignal; tools?: Record<string, KitTool> } = {}): KitHarnessContext {
    return new KitHarnessContext(options.tools ?? this.tools, { journal: this.journal, ...(options.signal ? { signal: options.signal } : {}) });
  }

  async step<T>(key: string, fn: () => T | Promise<T>, _options?: StepOptions): Promise<T> {
    const persisted = this.journal.steps.get(key);
    if (persisted !== undefined) return JSON.parse(persisted) as T;
    const value = await fn();
    const json = JSON.stringify(value);
    if (json === undefined) throw new Error(`step ${key} returned a value that is not JSON`);
    this.journal.steps.set(key, json);
    return JSON.parse(json) as T;
  }

  modelCall<T>(key: string, fn: () => T | Promise<T>, options?: StepOptions): Promise<T> {
    return this.step(key, fn, options);
  }

  async callTool(call: ModelToolCall): Promise<ToolCallOutcome> {
    this.toolCalls.push(call);
    const done = this.journal.toolResults.get(call.id);
    if (done) return done;
    const tool = this.tools[call.name];
    if (!tool) return { status: "completed", output: { error: `unknown tool ${call.name}` }, isError: true };
    if (tool.approval && !this.approved.has(call.name)) return { status: "paused", reason: "approval" };
    this.executed.push(call.name);
    const outcome: ToolCallOutcome = { status: "completed", output: tool.run(call.input), isError: false };
    this.journal.toolResults.set(call.id, outcome);
    return outcome;
  }

  async emit(type: string, data: Record<string, JsonValue> = {}): Promise<void> {
    this.events.push({ type, data: JSON.parse(JSON.stringify(data)) as Record<string, JsonValue> });
  }

  textDelta(delta: string): void {
    this.deltas.push(delta);
  }

  async recordUsage(usage: Omit<UsageRecord, "runId" | "conversationId" | "createdAt" | "agentId">): Promise<void> {
    this.usage.push(usage);
  }
}
