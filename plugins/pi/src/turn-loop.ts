import { randomUUID } from "node:crypto";
import type { HarnessContext, HarnessTurnInput, HarnessTurnResult, JsonValue, ModelToolCall } from "@assemblyline-agents/core";
import type { Api, AssistantMessage, Context, Model } from "@mariozechner/pi-ai";
import { resolvePiApiKey } from "./api-key.js";
import { textOf, toolCallsOf, toolResultMessage, toPiMessages, toPiTools } from "./context-conversion.js";
import { readContinuation, writeContinuation, type PiContinuationData } from "./continuation.js";
import { callModel } from "./model-call.js";
import { requestMaxTokens, resolvePiModel } from "./model-resolution.js";
import type { PiHarnessOptions } from "./options.js";
import { withOwnToolCallIds } from "./tool-call-ids.js";
import { screenToolCalls, type ScreenedReply } from "./tool-call-screening.js";

/**
 * One turn of the pi engine: ask the model, run its tool calls through the
 * runtime, repeat until the model answers without tool calls, a tool pauses the
 * run, or a tool fails. Every model call is a journaled step, so a replay of
 * this function after a crash or a resume reproduces the same transcript
 * without asking the model again.
 */
export async function runPiTurn(input: HarnessTurnInput, ctx: HarnessContext, options: PiHarnessOptions): Promise<HarnessTurnResult> {
  const model = resolvePiModel(input.modelSpec, options.models);
  const maxTokens = requestMaxTokens(input.modelSpec, options.models);
  const state = startingState(input, ctx, model);
  let apiKey: { value: string | undefined } | undefined;

  const askModel = async (): Promise<ScreenedReply> => {
    state.modelCalls += 1;
    const modelCall = state.modelCalls;
    const key = `model:${modelCall}`;
    const reply = await ctx.modelCall<JsonValue>(
      key,
      async () => {
        // Resolved here, not up front: a replayed call needs no key.
        apiKey ??= { value: resolvePiApiKey(input.modelSpec, model, options) };
        // Read per call: the runtime appends tools activated mid-turn (tool_describe, skills).
        const context: Context = { systemPrompt: input.context.instructions, messages: [...state.messages], tools: toPiTools(input.context.tools) };
        const reply = await callModel({
          spec: input.modelSpec,
          model,
          context,
          apiKey: apiKey.value,
          sessionId: input.runId,
          maxTokens,
          signal: ctx.signal,
          retry: options.retry ?? {},
          onTextDelta: (delta) => ctx.textDelta(delta),
          onTextRestart: () => ctx.textRestart?.(),
          onFailedAttemptUsage: (failed) => ctx.recordUsage(usageRecord(usageId(input.runId, key), failed)),
          logger: ctx.logger,
        });
        // Ids given and calls screened inside the step: both are journaled with the reply, so a replay
        // answers the same calls under the same ids and refuses the same ones.
        const screened = screenToolCalls(withOwnToolCallIds(reply.message, state.messages, modelCall), reply.rawToolArguments);
        const { message } = screened;
        // Emitted inside the step: the runtime commits it with the step's completion, so
        // each persisted model call is recorded exactly once, and a replay never repeats it.
        await ctx.emit("model.response", modelResponseEvent(key, screened));
        await ctx.recordUsage(usageRecord(usageId(input.runId, key), message));
        return JSON.parse(JSON.stringify(screened)) as JsonValue;
      },
      { metadata: { modelSpec: input.modelSpec } },
    );
    return persistedReply(reply);
  };

  /** Answer tool calls in order; a result ends the turn early when a call pauses or fails. */
  const answer = async (calls: ModelToolCall[]): Promise<HarnessTurnResult | undefined> => {
    for (const [index, call] of calls.entries()) {
      // A cancelled run answers none of the reply's remaining calls (the runtime would refuse them too).
      ctx.signal.throwIfAborted();
      const refusal = state.refusedToolCalls?.[call.id];
      if (refusal !== undefined) {
        state.messages.push(toolResultMessage(call, refusal, true));
        continue;
      }
      const outcome = await ctx.callTool(call);
      if (outcome.status === "completed") {
        state.messages.push(toolResultMessage(call, outcome.output, outcome.isError));
      } else if (outcome.status === "paused") {
        return { status: "paused", continuation: writeContinuation(input.agentRevision, { ...state, pendingToolCalls: calls.slice(index) }) };
      } else {
        return { status: "completed", response: { text: outcome.output.error } };
      }
    }
    return undefined;
  };

  let calls = state.pendingToolCalls;
  for (;;) {
    const stop = await answer(calls);
    if (stop) return stop;
    ctx.signal.throwIfAborted();
    const { message: reply, refusedToolCalls } = await askModel();
    state.messages.push(reply);
    calls = toolCallsOf(reply);
    state.refusedToolCalls = Object.keys(refusedToolCalls).length > 0 ? refusedToolCalls : undefined;
    if (calls.length === 0) return { status: "completed", response: { text: textOf(reply) } };
  }
}

function startingState(input: HarnessTurnInput, ctx: HarnessContext, model: Model<Api>): PiContinuationData {
  if (!input.continuation) {
    return { modelSpec: input.modelSpec, messages: toPiMessages(input.context.messages, model), pendingToolCalls: [], modelCalls: 0 };
  }
  const data = readContinuation(input.continuation);
  if (input.continuation.agentRevision !== input.agentRevision) {
    // Which revision a resume runs under is the runtime's policy; the transcript stays valid either way.
    ctx.logger.warn(
      { runId: input.runId, pausedUnder: input.continuation.agentRevision, resumedUnder: input.agentRevision },
      "resuming a pi continuation under another agent revision",
    );
  }
  return data;
}

/** A journaled model call; one journaled before tool calls were screened holds the bare message. */
function persistedReply(value: JsonValue): ScreenedReply {
  const reply = value as unknown as ScreenedReply | AssistantMessage;
  return "role" in reply ? { message: reply, refusedToolCalls: {} } : reply;
}

function modelResponseEvent(step: string, { message, refusedToolCalls }: ScreenedReply): Record<string, JsonValue> {
  return {
    step,
    provider: message.provider,
    model: message.model,
    responseId: message.responseId ?? null,
    stopReason: message.stopReason,
    text: textOf(message),
    toolCalls: toolCallsOf(message).map((call) => call.name),
    refusedToolCalls: toolCallsOf(message).flatMap((call) => {
      const error = refusedToolCalls[call.id];
      return error === undefined ? [] : [{ id: call.id, name: call.name, error }];
    }),
    usage: {
      inputTokens: message.usage.input,
      outputTokens: message.usage.output,
      cacheReadTokens: message.usage.cacheRead,
      cacheWriteTokens: message.usage.cacheWrite,
      costUsd: message.usage.cost.total,
    },
  };
}

/*
 * One id per provider call, never per step: the store keeps the first record of
 * an id, and one step can bill several calls (failed attempts, and the call made
 * again when a crash lost the step's result before it committed). A nonce rather
 * than the provider's response id, which some compatible servers repeat.
 */
function usageId(runId: string, step: string): string {
  return `${runId}:${step}:${randomUUID()}`;
}

function usageRecord(id: string, message: AssistantMessage): Parameters<HarnessContext["recordUsage"]>[0] {
  return {
    id,
    provider: message.provider,
    model: message.model,
    inputTokens: message.usage.input,
    outputTokens: message.usage.output,
    cacheReadTokens: message.usage.cacheRead,
    cacheWriteTokens: message.usage.cacheWrite,
    costUsd: message.usage.cost.total,
  };
}
