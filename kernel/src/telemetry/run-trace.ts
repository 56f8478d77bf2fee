import type { CaptureContent, EventContext, JsonValue, RunEvent, SpanAttributeValue, TelemetrySpan } from "@assemblyline-agents/core";
import { captureBody, captureMessages, capturesBodies } from "./capture.js";
import { spanIdFor, traceIdFor } from "./span-ids.js";
import type { AbandonedModelCalls } from "../run/run-driver.js";

/** How the tracer labels every span it builds. */
export interface TraceSettings {
  mode: Exclude<CaptureContent, "off">;
  resource: Record<string, string>;
  agent: EventContext;
}

/** Where a subagent's run sits: in its root run's trace, under the tool call that spawned it. */
export interface TraceLineage {
  traceId: string;
  parentSpanId: string;
}

interface OpenTool {
  startMs: number;
  name: string;
  input: JsonValue | undefined;
  approval?: "granted" | "denied";
}

/**
 * Terminal tool events and the outcome each records on the span. A denied call
 * ends with its denial: nothing is recorded for it after (the engine is given
 * the refusal as the call's result). A call that asked a question (`ask_question`,
 * or any tool pausing on input) ends with its answer, likewise: the answer is the
 * call's result, and the resumed run records nothing more for it.
 */
const TOOL_ENDINGS: Record<string, string> = {
  "tool.completed": "completed",
  "input.received": "completed",
  "tool.execution_failed": "failed",
  "approval.denied": "denied",
  "tool.input_invalid": "input_invalid",
  "tool.disabled": "disabled",
};

/**
 * What the events of one run say so far, folded in seq order, and the spans
 * each event finishes. Replayed work (`tool.replayed`, `durable_step.replayed`)
 * finishes none: it was exported when it first ran.
 */
export class RunTrace {
  private startMs = 0;
  private lastEventMs = 0;
  private modelSpec = "";
  private conversationId: string | null = null;
  private message: JsonValue = null;
  private metadata: JsonValue = null;
  private instructions = "";
  private inputTokens = 0;
  private outputTokens = 0;
  private costUsd = 0;
  private readonly tools = new Map<string, OpenTool>();
  /** A model response whose chat span waits for the step completion committed with it (see `apply`). */
  private pendingChat: { event: RunEvent; startMs: number; endMs: number } | undefined;
  readonly traceId: string;
  private readonly rootSpanId: string;

  /** The run's own agent: a subagent's run is recorded with its id (`<agent id>/<path>`) and named by its folder. */
  private agentId = "";
  private subagentPath = "";

  constructor(
    readonly runId: string,
    private readonly settings: TraceSettings,
    private readonly lineage?: TraceLineage,
  ) {
    this.traceId = lineage?.traceId ?? traceIdFor(runId);
    this.rootSpanId = spanIdFor(runId, "invoke_agent");
  }

  /** Fold one event in; returns the spans it finishes. */
  apply(event: RunEvent): TelemetrySpan[] {
    const at = Date.parse(event.createdAt);
    const previousMs = this.lastEventMs || at;
    this.lastEventMs = at;
    const chat = this.pendingChat;
    if (!chat) return this.fold(event, at, previousMs);
    // A model call's step completion says when the call began: the events before the response may
    // have been committed in the same append as it, after the call (the run's start is held for it).
    this.pendingChat = undefined;
    const started = event.type === "durable_step.completed" && typeof event.data.startedAt === "string" ? Date.parse(event.data.startedAt) : NaN;
    return [this.chatSpan(chat.event, Number.isNaN(started) ? chat.startMs : started, chat.endMs), ...this.fold(event, at, previousMs)];
  }

  private fold(event: RunEvent, at: number, previousMs: number): TelemetrySpan[] {
    const data = event.data;
    switch (event.type) {
      case "run.created": {
        this.startMs = at;
        this.modelSpec = text(data.modelSpec);
        this.conversationId = typeof data.conversationId === "string" ? data.conversationId : null;
        this.agentId = text(data.agentId);
        const input = (data.input ?? {}) as Record<string, JsonValue>;
        this.subagentPath = text(parentOf(data)?.subagent);
        this.message = input.message ?? null;
        this.metadata = input.metadata ?? null;
        return [];
      }
      case "run.started":
        this.modelSpec = text(data.modelSpec) || this.modelSpec;
        this.instructions = text(data.instructions);
        return [];
      case "model.response":
        this.pendingChat = { event, startMs: previousMs, endMs: at };
        return [];
      case "model.failed":
        return [this.failedChatSpan(event, at)];
      case "tool.called":
        this.tools.set(text(data.callId), { startMs: at, name: text(data.toolName), input: data.input });
        return [];
      case "approval.granted":
      case "approval.denied": {
        const open = this.tools.get(text(data.callId));
        if (open) open.approval = event.type === "approval.granted" ? "granted" : "denied";
        return event.type === "approval.denied" ? [this.toolSpan(event, previousMs, at)] : [];
      }
      case "durable_step.completed":
        return [this.stepSpan(event, previousMs, at)];
      case "run.completed":
      case "run.failed":
        return [this.agentSpan(event, at)];
      default:
        return TOOL_ENDINGS[event.type] ? [this.toolSpan(event, previousMs, at)] : [];
    }
  }

  private chatSpan(event: RunEvent, startMs: number, endMs: number): TelemetrySpan {
    return this.chatSpanOf(event.data, spanIdFor(this.runId, "chat", event.seq), startMs, endMs);
  }

  private chatSpanOf(data: Record<string, JsonValue>, spanId: string, startMs: number, endMs: number): TelemetrySpan {
    const usage = (data.usage ?? {}) as Record<string, JsonValue>;
    const { provider: specProvider, model: requestModel } = splitModelSpec(this.modelSpec);
    const finishReason = typeof data.stopReason === "string" ? semconvFinishReason(data.stopReason) : undefined;
    const attributes: Record<string, SpanAttributeValue | undefined> = {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": semconvProvider(typeof data.provider === "string" ? data.provider : specProvider),
      "gen_ai.request.model": requestModel,
      "gen_ai.response.model": typeof data.model === "string" ? data.model : undefined,
      "gen_ai.response.id": typeof data.responseId === "string" ? data.responseId : undefined,
      "gen_ai.response.finish_reasons": finishReason ? [finishReason] : undefined,
      "gen_ai.usage.input_tokens": promptTokens(usage),
      "gen_ai.usage.output_tokens": numberOrUndefined(usage.outputTokens),
      "gen_ai.usage.cache_read.input_tokens": numberOrUndefined(usage.cacheReadTokens),
      "gen_ai.usage.cache_creation.input_tokens": numberOrUndefined(usage.cacheWriteTokens),
      "assembly_line.usage.cost_usd": numberOrUndefined(usage.costUsd),
    };
    this.inputTokens += promptTokens(usage) ?? 0;
    this.outputTokens += numberOrUndefined(usage.outputTokens) ?? 0;
    this.costUsd += numberOrUndefined(usage.costUsd) ?? 0;
    if (capturesBodies(this.settings.mode)) {
      const toolCalls = Array.isArray(data.toolCalls) ? data.toolCalls.map((name) => ({ type: "tool_call", name: text(name) })) : [];
      const finish = finishReason ?? (toolCalls.length > 0 ? "tool_call" : "stop");
      attributes["gen_ai.output.messages"] = captureMessages([{ role: "assistant", parts: [{ type: "text", content: data.text ?? "" }, ...toolCalls], finish_reason: finish }], this.settings.mode);
    }
    return this.span(`chat ${requestModel}`, spanId, "client", startMs, endMs, attributes);
  }

  /** A model call that threw: its chat span ends with the error (GenAI conventions: status error, `error.type`). */
  private failedChatSpan(event: RunEvent, endMs: number): TelemetrySpan {
    const data = event.data;
    const { provider, model } = splitModelSpec(this.modelSpec);
    const started = typeof data.startedAt === "string" ? Date.parse(data.startedAt) : NaN;
    const attributes: Record<string, SpanAttributeValue | undefined> = {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": semconvProvider(provider),
      "gen_ai.request.model": model,
      "error.type": text(data.code) || text(data.errorClass) || "_OTHER",
    };
    return this.span(`chat ${model}`, spanIdFor(this.runId, "chat", event.seq), "client", Number.isNaN(started) ? endMs : started, endMs, attributes, this.errorStatus(data));
  }

  private toolSpan(event: RunEvent, previousMs: number, endMs: number): TelemetrySpan {
    const data = event.data;
    const callId = text(data.callId);
    const open = this.tools.get(callId);
    this.tools.delete(callId);
    const name = open?.name ?? text(data.toolName);
    const outcome = TOOL_ENDINGS[event.type]!;
    const attributes: Record<string, SpanAttributeValue | undefined> = {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": name,
      "gen_ai.tool.call.id": callId,
      "gen_ai.tool.type": "function",
      "assembly_line.tool.outcome": outcome,
      "assembly_line.tool.approval": open?.approval ?? (outcome === "denied" ? "denied" : undefined),
      // A call that did not run (denied, invalid input, disabled) ended in an error too: the model is given one as its result.
      "error.type": outcome === "completed" ? undefined : outcome === "failed" ? text(data.code) || text(data.errorClass) || "tool_error" : outcome,
    };
    if (capturesBodies(this.settings.mode)) {
      attributes["gen_ai.tool.call.arguments"] = captureBody(open?.input ?? data.input ?? null, this.settings.mode);
      attributes["gen_ai.tool.call.result"] = captureBody(toolResult(event) ?? null, this.settings.mode);
    }
    const status = outcome === "completed" ? { code: "ok" as const } : outcome === "failed" ? this.errorStatus(data) : this.refusalStatus(outcome, data);
    return this.span(`execute_tool ${name}`, spanIdFor(this.runId, "tool", callId), "internal", open?.startMs ?? previousMs, endMs, attributes, status);
  }

  /**
   * This process lost the run to another replica: the tool calls it left open
   * end here, with the error. Their ids are this attempt's own (the time it was
   * given up): the new owner continues each call and exports the call's span.
   */
  abandon(atMs: number, modelCalls?: AbandonedModelCalls): TelemetrySpan[] {
    const spans = [...this.tools].map(([callId, open]) => {
      const attributes: Record<string, SpanAttributeValue | undefined> = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": open.name,
        "gen_ai.tool.call.id": callId,
        "gen_ai.tool.type": "function",
        "assembly_line.tool.outcome": "lease_lost",
        "assembly_line.tool.approval": open.approval,
        "error.type": "AL_ERR_RUN_LEASE_LOST",
      };
      if (capturesBodies(this.settings.mode)) attributes["gen_ai.tool.call.arguments"] = captureBody(open.input ?? null, this.settings.mode);
      // The message quotes nothing of the run: it is kept in every mode.
      const status = { code: "error" as const, message: `this process lost run ${this.runId} to another replica, which continues this call` };
      return this.span(`execute_tool ${open.name}`, spanIdFor(this.runId, "tool", callId, "lease_lost", atMs), "internal", open.startMs, atMs, attributes, status);
    });
    this.tools.clear();
    return modelCalls ? [...spans, ...this.abandonedChats(atMs, modelCalls)] : spans;
  }

  /**
   * The model calls a lost lease left unrecorded: made (and billed) here, their
   * results never written, made again by the replica that took the run over.
   * Each ends now with the error; one that returned keeps its response's usage.
   */
  private abandonedChats(atMs: number, { running, held }: AbandonedModelCalls): TelemetrySpan[] {
    const status = { code: "error" as const, message: `this process lost run ${this.runId} to another replica, which makes this model call again` };
    const spans: TelemetrySpan[] = [];
    held.forEach((event, index) => {
      if (event.type !== "model.response") return;
      const step = held.slice(index + 1).find((next) => next.type === "durable_step.completed");
      const key = text(step?.data?.key) || `response:${index}`;
      const started = typeof step?.data?.startedAt === "string" ? Date.parse(step.data.startedAt) : NaN;
      const span = this.chatSpanOf(event.data ?? {}, spanIdFor(this.runId, "chat", key, "lease_lost", atMs), Number.isNaN(started) ? atMs : started, atMs);
      spans.push({ ...span, attributes: { ...span.attributes, "error.type": "AL_ERR_RUN_LEASE_LOST" }, status });
    });
    const { provider, model } = splitModelSpec(this.modelSpec);
    for (const call of running) {
      const started = Date.parse(call.startedAt);
      const attributes = { "gen_ai.operation.name": "chat", "gen_ai.provider.name": semconvProvider(provider), "gen_ai.request.model": model, "error.type": "AL_ERR_RUN_LEASE_LOST" };
      spans.push(this.span(`chat ${model}`, spanIdFor(this.runId, "chat", call.key, "lease_lost", atMs), "client", Number.isNaN(started) ? atMs : started, atMs, attributes, status));
    }
    return spans;
  }

  private stepSpan(event: RunEvent, previousMs: number, endMs: number): TelemetrySpan {
    const key = text(event.data.key);
    const started = typeof event.data.startedAt === "string" ? Date.parse(event.data.startedAt) : NaN;
    const attributes: Record<string, SpanAttributeValue | undefined> = { "assembly_line.operation.name": "durable_step", "assembly_line.step.key": key };
    if (capturesBodies(this.settings.mode)) attributes["assembly_line.step.metadata"] = captureBody(event.data.metadata ?? {}, this.settings.mode);
    return this.span(`step ${key}`, spanIdFor(this.runId, "step", key), "internal", Number.isNaN(started) ? previousMs : started, endMs, attributes);
  }

  private agentSpan(event: RunEvent, endMs: number): TelemetrySpan {
    const { agent, mode } = this.settings;
    const failed = event.type === "run.failed";
    const attributes: Record<string, SpanAttributeValue | undefined> = {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.id": this.agentId || agent.agentId,
      "gen_ai.agent.name": this.agentName,
      "gen_ai.provider.name": semconvProvider(splitModelSpec(this.modelSpec).provider),
      "gen_ai.request.model": splitModelSpec(this.modelSpec).model,
      "gen_ai.usage.input_tokens": this.inputTokens,
      "gen_ai.usage.output_tokens": this.outputTokens,
      "assembly_line.usage.cost_usd": this.costUsd,
      "assembly_line.run.status": failed ? "failed" : "completed",
      "error.type": failed ? text(event.data.code) || "run_failed" : undefined,
    };
    if (capturesBodies(mode)) {
      attributes["gen_ai.input.messages"] = captureMessages([{ role: "user", parts: [{ type: "text", content: this.message }] }], mode);
      if (!failed) attributes["gen_ai.output.messages"] = captureMessages([{ role: "assistant", parts: [{ type: "text", content: event.data.text ?? "" }], finish_reason: "stop" }], mode);
    }
    if (mode === "full") {
      // The conventions' form: a list of parts, as the messages' (a backend renders it as the system prompt).
      attributes["gen_ai.system_instructions"] = captureMessages([{ type: "text", content: this.instructions }], mode);
      attributes["assembly_line.run.metadata"] = captureBody(this.metadata, mode);
    }
    const span = this.span(`invoke_agent ${this.agentName}`, this.rootSpanId, "internal", this.startMs || endMs, endMs, attributes, failed ? this.errorStatus(event.data) : { code: "ok" });
    if (this.lineage) span.parentSpanId = this.lineage.parentSpanId;
    else delete span.parentSpanId;
    return span;
  }

  /** A subagent is named by its folder (`researcher` for `researcher` or `lead/researcher`), as its parent calls it. */
  private get agentName(): string {
    return this.subagentPath ? this.subagentPath.split("/").pop()! : this.settings.agent.agentName;
  }

  /** Under usage an error is named by its code only: messages can quote inputs. */
  private errorStatus(data: Record<string, JsonValue>): TelemetrySpan["status"] {
    const code = text(data.code);
    const message = capturesBodies(this.settings.mode) ? captureBody(data.error ?? "", this.settings.mode) : code || "failed";
    return { code: "error", message };
  }

  /** A call that did not run: named by its outcome under usage, with its reason under content and full. */
  private refusalStatus(outcome: string, data: Record<string, JsonValue>): TelemetrySpan["status"] {
    const reason = data.error ?? data.reason;
    const message = capturesBodies(this.settings.mode) && typeof reason === "string" && reason !== "" ? captureBody(reason, this.settings.mode) : outcome;
    return { code: "error", message };
  }

  private span(
    name: string,
    spanId: string,
    kind: TelemetrySpan["kind"],
    startTimeMs: number,
    endTimeMs: number,
    extra: Record<string, SpanAttributeValue | undefined>,
    status: TelemetrySpan["status"] = { code: "ok" },
  ): TelemetrySpan {
    const attributes: Record<string, SpanAttributeValue> = {
      "assembly_line.run.id": this.runId,
      "assembly_line.agent.revision": this.settings.agent.agentRevision,
    };
    if (this.conversationId) attributes["gen_ai.conversation.id"] = this.conversationId;
    for (const [key, value] of Object.entries(extra)) if (value !== undefined && value !== "") attributes[key] = value;
    return {
      traceId: this.traceId,
      spanId,
      parentSpanId: this.rootSpanId,
      name,
      kind,
      startTimeMs: Math.min(startTimeMs, endTimeMs),
      endTimeMs,
      status,
      attributes,
      resource: { ...this.settings.resource },
    };
  }
}

/** What the engine was given as the result of the call `event` ended (an answered question: the answer, as the tool's output holds it). */
function toolResult(event: RunEvent): JsonValue | undefined {
  const data = event.data;
  switch (event.type) {
    case "tool.completed":
      return data.output;
    case "input.received":
      return { answer: data.answer ?? null };
    case "tool.execution_failed":
      return { error: data.error ?? null };
    case "approval.denied":
      return { denied: true, reason: data.reason ?? null };
    default:
      return data;
  }
}

/**
 * `openai/gpt-5.4-mini` is provider `openai`, model `gpt-5.4-mini`; a routed
 * spec such as `scripted:/abs/path/script.json` is provider `scripted` and the
 * file's name, so no local path leaves the process.
 */
function splitModelSpec(spec: string): { provider: string | undefined; model: string } {
  const colon = spec.indexOf(":");
  const slash = spec.indexOf("/");
  if (colon > 0 && (slash < 0 || colon < slash)) return { provider: spec.slice(0, colon), model: spec.slice(colon + 1).split("/").pop() ?? "" };
  if (slash > 0) return { provider: spec.slice(0, slash), model: spec.slice(slash + 1) };
  return { provider: undefined, model: spec };
}

/**
 * Engines report stop reasons in their provider's words (`toolUse`, `end_turn`,
 * `max_tokens`); `gen_ai.response.finish_reasons` takes the semantic conventions'
 * values, so dashboards group every provider's calls alike. Others pass through.
 */
const FINISH_REASONS: Record<string, string> = {
  stop: "stop",
  end_turn: "stop",
  stop_sequence: "stop",
  completed: "stop",
  length: "length",
  max_tokens: "length",
  max_output_tokens: "length",
  tooluse: "tool_call",
  tool_use: "tool_call",
  tool_calls: "tool_call",
  tool_call: "tool_call",
  function_call: "tool_call",
  content_filter: "content_filter",
  safety: "content_filter",
  refusal: "content_filter",
  error: "error",
  aborted: "error",
};

function semconvFinishReason(reason: string): string {
  return FINISH_REASONS[reason.toLowerCase()] ?? reason;
}

/** `gen_ai.provider.name` well-known values for the providers whose engine names differ; others pass through. */
const PROVIDER_NAMES: Record<string, string> = {
  google: "gcp.gemini",
  "google-gemini-cli": "gcp.gemini",
  "google-vertex": "gcp.vertex_ai",
  "amazon-bedrock": "aws.bedrock",
  "azure-openai-responses": "azure.ai.openai",
  mistral: "mistral_ai",
  xai: "x_ai",
};

function semconvProvider(provider: string | undefined): string | undefined {
  return provider === undefined ? undefined : (PROVIDER_NAMES[provider] ?? provider);
}

function text(value: JsonValue | undefined): string {
  return typeof value === "string" ? value : "";
}

function numberOrUndefined(value: JsonValue | undefined): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

/** The spawning run and call of a subagent's run, from its `run.created` event; undefined for a root run. */
export function parentOf(created: Record<string, JsonValue>): { runId: string; callId: string; subagent?: JsonValue } | undefined {
  const input = created.input;
  if (typeof input !== "object" || input === null || Array.isArray(input)) return undefined;
  const parent = input.parent;
  if (typeof parent !== "object" || parent === null || Array.isArray(parent)) return undefined;
  return typeof parent.runId === "string" && typeof parent.callId === "string" ? { runId: parent.runId, callId: parent.callId, subagent: parent.subagent } : undefined;
}

/**
 * The GenAI conventions' input tokens: every token of the prompt, "including
 * cached tokens", of which cache_read and cache_creation are parts. A usage
 * record keeps the three apart (inputTokens are those neither read from nor
 * written to the provider's cache), so the attribute is their sum.
 */
function promptTokens(usage: Record<string, JsonValue>): number | undefined {
  const input = numberOrUndefined(usage.inputTokens);
  if (input === undefined) return undefined;
  return input + (numberOrUndefined(usage.cacheReadTokens) ?? 0) + (numberOrUndefined(usage.cacheWriteTokens) ?? 0);
}
