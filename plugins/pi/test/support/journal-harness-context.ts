import type { HarnessContext, JsonValue, ModelToolCall, RuntimeLogger, StepOptions, ToolCallOutcome, UsageRecord } from "@assemblyline-agents/core";

/** How the tool table answers a call. */
export interface TestTool {
  run(input: JsonValue): JsonValue | Promise<JsonValue>;
  /** Pause for approval until the call id is approved or denied. */
  approval?: boolean;
}

export type RecordedUsage = Omit<UsageRecord, "runId" | "conversationId" | "createdAt" | "agentId">;

/**
 * The runtime's side of the harness contract, small but real: a journal for
 * step() that returns persisted results on replay, a tool table with an approval
 * gate and a tool-result journal for callTool(), and arrays for what the harness
 * reports. A second context built on the same `journal` and `toolResults` plays a
 * resume or a crash recovery.
 */
export class JournalHarnessContext implements HarnessContext {
  readonly journal: Map<string, string>;
  readonly toolResults: Map<string, ToolCallOutcome>;
  readonly events: { type: string; data: Record<string, JsonValue> }[] = [];
  readonly usage = new Map<string, RecordedUsage>();
  readonly deltas: string[] = [];
  /** How many deltas had been streamed at each textRestart (what the host showed before it was voided). */
  readonly restarts: number[] = [];
  readonly toolCalls: ModelToolCall[] = [];
  readonly stepsRun: string[] = [];
  readonly stepsReplayed: string[] = [];
  readonly approved = new Set<string>();
  readonly denied = new Set<string>();
  readonly logs: { level: string; fields: Record<string, unknown>; msg?: string }[] = [];
  readonly logger: RuntimeLogger;
  readonly signal: AbortSignal;
  onTextDelta: ((delta: string) => void) | undefined;

  constructor(
    readonly runId: string,
    private readonly tools: Record<string, TestTool>,
    shared: { journal?: Map<string, string>; toolResults?: Map<string, ToolCallOutcome>; signal?: AbortSignal } = {},
  ) {
    this.journal = shared.journal ?? new Map();
    this.toolResults = shared.toolResults ?? new Map();
    this.signal = shared.signal ?? new AbortController().signal;
    const log = (level: string) => (fields: Record<string, unknown>, msg?: string) => void this.logs.push({ level, fields, ...(msg ? { msg } : {}) });
    this.logger = { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
  }

  async step<T>(key: string, fn: () => T | Promise<T>, _options?: StepOptions): Promise<T> {
    const persisted = this.journal.get(key);
    if (persisted !== undefined) {
      this.stepsReplayed.push(key);
      this.events.push({ type: "durable_step.replayed", data: { key } });
      return JSON.parse(persisted) as T;
    }
    const value = await fn();
    const json = JSON.stringify(value);
    if (json === undefined || JSON.stringify(JSON.parse(json)) !== json) throw new Error(`step ${key} returned a value that is not JSON`);
    this.journal.set(key, json);
    this.stepsRun.push(key);
    this.events.push({ type: "durable_step.completed", data: { key } });
    return JSON.parse(json) as T;
  }

  modelCall<T>(key: string, fn: () => T | Promise<T>, options?: StepOptions): Promise<T> {
    return this.step(key, fn, options);
  }

  async callTool(call: ModelToolCall): Promise<ToolCallOutcome> {
    this.toolCalls.push(call);
    const done = this.toolResults.get(call.id);
    if (done) {
      this.events.push({ type: "tool.replayed", data: { id: call.id } });
      return done;
    }
    const tool = this.tools[call.name];
    if (!tool) return this.finish(call, { status: "completed", output: { error: `unknown tool ${call.name}` }, isError: true });
    if (tool.approval && this.denied.has(call.id)) {
      return this.finish(call, { status: "completed", output: { error: "The user denied this tool call." }, isError: true });
    }
    if (tool.approval && !this.approved.has(call.id)) {
      this.events.push({ type: "approval.requested", data: { id: call.id, name: call.name } });
      return { status: "paused", reason: "approval" };
    }
    try {
      return this.finish(call, { status: "completed", output: await tool.run(call.input), isError: false });
    } catch (error) {
      return this.finish(call, { status: "failed", output: { error: error instanceof Error ? error.message : String(error) } });
    }
  }

  async emit(type: string, data: Record<string, JsonValue> = {}): Promise<void> {
    JSON.stringify(data);
    this.events.push({ type, data });
  }

  textDelta(delta: string): void {
    this.deltas.push(delta);
    this.onTextDelta?.(delta);
  }

  textRestart(): void {
    this.restarts.push(this.deltas.length);
  }

  async recordUsage(usage: RecordedUsage): Promise<void> {
    if (!this.usage.has(usage.id)) this.usage.set(usage.id, usage);
  }

  eventsOfType(type: string): Record<string, JsonValue>[] {
    return this.events.filter((event) => event.type === type).map((event) => event.data);
  }

  private finish(call: ModelToolCall, outcome: ToolCallOutcome): ToolCallOutcome {
    this.toolResults.set(call.id, outcome);
    this.events.push({ type: outcome.status === "failed" ? "tool.execution_failed" : "tool.completed", data: { id: call.id, name: call.name } });
    return outcome;
  }
}
