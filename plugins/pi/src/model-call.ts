import { AssemblyLineError, type RuntimeLogger } from "@assemblyline-agents/core";
import { stream, type Api, type AssistantMessage, type AssistantMessageEventStream, type Context, type Model, type StreamFunction } from "@mariozechner/pi-ai";
import type { PiRetryOptions } from "./options.js";
import { watchProviderResponse, type ProviderResponse } from "./provider-response.js";
import { parseRetryAfter, retryTransientFailures } from "./retry.js";
import { callSecrets, redactCallSecrets } from "./secret-redaction.js";

export interface ModelCallRequest {
  spec: string;
  model: Model<Api>;
  context: Context;
  /** `undefined` lets the provider use ambient credentials. */
  apiKey: string | undefined;
  /** Groups a run's calls for providers' prompt caching. */
  sessionId: string;
  /** The reply's token cap sent to the provider (the host's `maxTokens`); undefined leaves it to pi-ai. */
  maxTokens: number | undefined;
  signal: AbortSignal;
  retry: PiRetryOptions;
  onTextDelta(delta: string): void;
  /** What was streamed of the reply is void: the call is asked again after part of it was streamed. */
  onTextRestart(): void;
  /**
   * An attempt that failed or was aborted after the provider reported usage for it
   * (Anthropic does at the stream's start): it is billed all the same.
   */
  onFailedAttemptUsage?(message: AssistantMessage): Promise<void>;
  logger: RuntimeLogger;
}

/** A model reply, with the raw argument text of each tool call by its content index. */
export interface ModelCallReply {
  message: AssistantMessage;
  rawToolArguments: Map<number, string>;
}

/** How an attempt failed, which decides whether another may succeed. */
export type ProviderFailureKind =
  /** An HTTP error status: 429 and 5xx are retried. */
  | "status"
  /** No response at all (refused, reset, timed out): retried. */
  | "connection"
  /** Accepted (200), then the stream broke or carried a server error: retried. */
  | "stream"
  /** The provider's final word on this request (a 4xx, a refusal, a content filter). */
  | "final";

/** One attempt's failure as the provider reported it. */
export class ProviderCallFailure extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly retryable: boolean,
    readonly retryAfterMs: number | undefined,
    readonly kind: ProviderFailureKind = retryable ? "status" : "final",
    /** Part of the reply's text had already been streamed to the host when it failed. */
    readonly streamedText = false,
  ) {
    super(message);
    this.name = "ProviderCallFailure";
  }
}

/**
 * Ask the model once, streaming text deltas as they arrive, and retry 429/5xx
 * answers, lost connections and streams that break after the provider accepted
 * the request. The SDKs under pi-ai retry by themselves (maxRetries 2, uncapped
 * `retry-after`, a wait that ignores abort), so they are told `maxRetries: 0` and
 * this is the only retry layer.
 *
 * An attempt that already streamed text is retried too, after `onTextRestart`
 * tells the host that what it showed of the reply is void (the reply streams
 * again from its start): only the recorded reply is durable, never the deltas.
 */
export async function callModel(request: ModelCallRequest): Promise<ModelCallReply> {
  const { spec, signal } = request;
  let attempts = 0;
  try {
    return await retryTransientFailures(
      (attempt) => {
        attempts = attempt;
        return attemptModelCall(request);
      },
      {
        classify: (error) =>
          error instanceof ProviderCallFailure ? { retryable: error.retryable, retryAfterMs: error.retryAfterMs, error } : undefined,
        onRetry: ({ attempt, delayMs, error }) => {
          request.logger.warn({ modelSpec: spec, attempt, status: error.status, delayMs, error: error.message }, "model call failed; retrying");
          // The host showed part of a reply that will not be the reply: it streams again from its start.
          if (error.streamedText) request.onTextRestart();
        },
      },
      request.retry,
      signal,
    );
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (error instanceof ProviderCallFailure) throw providerError(spec, error, attempts);
    throw error;
  }
}

async function attemptModelCall(request: ModelCallRequest): Promise<ModelCallReply> {
  const { model, context, signal } = request;
  // pi-ai keeps only its repaired parse of tool-call arguments; the text as sent is gathered here.
  const rawToolArguments = new Map<number, string>();
  let streamedText = false;
  let endWatch: EndMarkerWatch | undefined;
  // The provider SDKs never remove the abort listener they add to the signal they get: each attempt
  // gets a signal of its own, so the turn's signal holds none after the attempt, however many calls a turn makes.
  const attemptAbort = new AbortController();
  const abortAttempt = () => attemptAbort.abort(signal.reason);
  if (signal.aborted) abortAttempt();
  else signal.addEventListener("abort", abortAttempt, { once: true });
  const { value: message, response } = await watchProviderResponse(async () => {
    const options = {
      ...(request.apiKey !== undefined ? { apiKey: request.apiKey } : {}),
      signal: attemptAbort.signal,
      maxRetries: 0,
      sessionId: request.sessionId,
      ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {}),
    };
    const unmarkedEnd = UNMARKED_END_PROVIDERS[model.api];
    const events = unmarkedEnd ? (await unmarkedEnd.load())(model, context, options) : stream(model, context, options);
    if (unmarkedEnd) endWatch = watchEndMarker(events, unmarkedEnd.endMarker);
    for await (const event of events) {
      if (event.type === "text_delta") {
        streamedText = true;
        request.onTextDelta(event.delta);
      } else if (event.type === "toolcall_delta") {
        rawToolArguments.set(event.contentIndex, (rawToolArguments.get(event.contentIndex) ?? "") + event.delta);
      }
    }
    return events.result();
  }).finally(() => signal.removeEventListener("abort", abortAttempt));
  const missingEnd = endWatch?.missing();
  if (signal.aborted || message.stopReason === "aborted") {
    // Billed all the same: the prompt's tokens reported before the abort, or a reply that ended as it came.
    if (hasUsage(message)) await request.onFailedAttemptUsage?.(message);
    throw signal.reason ?? new Error(message.errorMessage ?? "aborted");
  }
  if (message.stopReason === "error") {
    if (hasUsage(message)) await request.onFailedAttemptUsage?.(message);
    // Redacted before anything reads it: the message reaches the run's error, `model.failed`, logs and failure deliveries.
    const errorMessage = redactCallSecrets(message.errorMessage ?? "unknown provider error", callSecrets(model, request.apiKey));
    throw classifyFailure(errorMessage, response, streamedText);
  }
  if (missingEnd !== undefined) {
    if (hasUsage(message)) await request.onFailedAttemptUsage?.(message);
    // A dropped stream in all but name: the reply may be cut short, and its tool calls an incomplete set.
    throw new ProviderCallFailure(`the stream ended before its end (${missingEnd}), so the reply may be incomplete`, undefined, true, undefined, "stream", streamedText);
  }
  return { message, rawToolArguments };
}

/**
 * The APIs whose pi-ai provider hands back a stream that stops before its end
 * marker as a complete reply, with what the stream then lacks. These providers
 * start the reply's `stopReason` at "stop" and write it only when the marker
 * arrives; Anthropic's fails such a stream by itself ("stream ended before
 * message_stop"). Each is called through its own entry point (lazily, as
 * `stream()` would import it): `stream()` forwards a provider's events a few
 * ticks late, and the watch must be in place before the provider reads a chunk.
 */
const UNMARKED_END_PROVIDERS: Partial<Record<Api, { endMarker: string; load(): Promise<StreamFunction> }>> = {
  "openai-completions": {
    endMarker: "no chunk with a finish_reason",
    load: async () => (await import("@mariozechner/pi-ai/openai-completions")).streamOpenAICompletions as StreamFunction,
  },
  "openai-responses": {
    endMarker: "no response.completed event",
    load: async () => (await import("@mariozechner/pi-ai/openai-responses")).streamOpenAIResponses as StreamFunction,
  },
  "azure-openai-responses": {
    endMarker: "no response.completed event",
    load: async () => (await import("@mariozechner/pi-ai/azure-openai-responses")).streamAzureOpenAIResponses as StreamFunction,
  },
  "openai-codex-responses": {
    endMarker: "no response.completed event",
    load: async () => (await import("@mariozechner/pi-ai/openai-codex-responses")).streamOpenAICodexResponses as StreamFunction,
  },
};

interface EndMarkerWatch {
  /** What the stream lacked when its end never came, else undefined; called once the stream is over. */
  missing(): string | undefined;
}

/*
 * pi-ai reports neither the provider's end marker nor its absence, only the
 * `stopReason` it writes when the marker arrives. The write is observed on the
 * reply it streams (a plain field again once the stream is over) from the
 * `start` event on, caught as the provider pushes it: before it reads a chunk.
 */
function watchEndMarker(events: AssistantMessageEventStream, endMarker: string): EndMarkerWatch {
  let started: AssistantMessage | undefined;
  let ended = false;
  const push = events.push.bind(events);
  events.push = (event) => {
    if (event.type === "start" && !started) {
      started = event.partial;
      let stopReason = started.stopReason;
      Object.defineProperty(started, "stopReason", {
        configurable: true,
        enumerable: true,
        get: () => stopReason,
        set: (value: AssistantMessage["stopReason"]) => {
          stopReason = value;
          ended = true;
        },
      });
    }
    push(event);
  };
  return {
    missing() {
      if (!started) return undefined;
      Object.defineProperty(started, "stopReason", { value: started.stopReason, writable: true, enumerable: true, configurable: true });
      return ended ? undefined : endMarker;
    },
  };
}

/*
 * The status comes from the observed HTTP response; when none was observed (a
 * non-undici fetch) it is read from the message, which the OpenAI and Anthropic
 * SDKs start with the status code ("429 Rate limit reached ...").
 */
function classifyFailure(errorMessage: string, response: ProviderResponse | undefined, streamedText: boolean): ProviderCallFailure {
  const failedResponse = response && response.status >= 400 ? response : undefined;
  const status = failedResponse?.status ?? leadingStatus(errorMessage);
  const retryAfterMs = failedResponse ? parseRetryAfter(failedResponse.headers) : undefined;
  if (status !== undefined) {
    const retryable = status === 429 || (status >= 500 && status <= 599);
    return new ProviderCallFailure(errorMessage, status, retryable, retryAfterMs, retryable ? "status" : "final", streamedText);
  }
  const inStream = inStreamError(errorMessage);
  const message = inStream ? `${inStream.type}: ${inStream.message}` : errorMessage;
  // undici's "terminated": the body's connection closed before the stream ended.
  if (!response && /^(Connection error\.|Request timed out\.|terminated\b)/.test(errorMessage)) {
    return new ProviderCallFailure(message, undefined, true, undefined, "connection", streamedText);
  }
  if (response) {
    const transient = inStream ? TRANSIENT_ANTHROPIC_ERRORS.has(inStream.type) : !FINAL_AFTER_ACCEPT.some((pattern) => pattern.test(errorMessage));
    return new ProviderCallFailure(message, undefined, transient, undefined, transient ? "stream" : "final", streamedText);
  }
  return new ProviderCallFailure(message, undefined, false, undefined, "final", streamedText);
}

/** Anthropic's in-stream `error` event types that mean "try again" (what a 529 or 5xx would say). */
const TRANSIENT_ANTHROPIC_ERRORS = new Set(["overloaded_error", "api_error", "rate_limit_error", "timeout_error"]);

/*
 * After the provider accepted the request, a failure is the stream breaking
 * (a dropped connection, OpenAI's in-stream server error, a truncated event)
 * unless it is the model's own ending, which another attempt would repeat:
 * pi-ai's messages for a content filter or refusal (Anthropic's surfaces as
 * "An unknown error occurred") and for a response the API marked incomplete.
 */
const FINAL_AFTER_ACCEPT = [/^Provider finish_reason: (?!network_error)/, /^An unknown error occurred$/, /^Unhandled stop reason/, /^incomplete: /];

/** Anthropic's SDK reports an in-stream `error` event as its raw JSON data. */
function inStreamError(errorMessage: string): { type: string; message: string } | undefined {
  if (!errorMessage.startsWith("{")) return undefined;
  try {
    const data = JSON.parse(errorMessage) as { error?: { type?: unknown; message?: unknown } };
    const type = data.error?.type;
    return typeof type === "string" ? { type, message: typeof data.error?.message === "string" ? data.error.message : "" } : undefined;
  } catch {
    return undefined;
  }
}

function hasUsage(message: AssistantMessage): boolean {
  const { input, output, cacheRead, cacheWrite } = message.usage;
  return input + output + cacheRead + cacheWrite > 0;
}

function leadingStatus(errorMessage: string): number | undefined {
  const match = /^([1-5]\d\d)\b/.exec(errorMessage);
  return match ? Number(match[1]) : undefined;
}

function providerError(spec: string, failure: ProviderCallFailure, attempts: number): AssemblyLineError {
  const answered = failure.status !== undefined ? `answered ${failure.status}` : failure.kind === "stream" ? "broke off the stream" : "failed";
  const details = { spec, status: failure.status ?? null, attempts };
  if (failure.retryable) {
    return new AssemblyLineError("AL_ERR_MODEL_PROVIDER", `${spec}: the provider ${answered} on all ${attempts} attempts: ${failure.message}`, {
      fix: retryFix(failure.kind),
      details,
      cause: failure,
    });
  }
  return new AssemblyLineError("AL_ERR_MODEL_PROVIDER", `${spec}: the provider ${answered}: ${failure.message}`, {
    fix: fixForStatus(failure.status),
    details,
    cause: failure,
  });
}

function retryFix(kind: ProviderFailureKind): string {
  const raise = "or raise piAgentHarness({ retry: { maxRetries } })";
  if (kind === "connection") return `The provider could not be reached; check the baseUrl and the network, then try the run again, ${raise}.`;
  if (kind === "stream") return `The provider kept breaking off its replies (overloaded, or the connection dropped); try the run again later, ${raise}.`;
  return `The provider is failing or rate limiting; try the run again later, ${raise}.`;
}

function fixForStatus(status: number | undefined): string {
  if (status === 401 || status === 403) return "Check the API key (piAgentHarness({ apiKeys }) or the provider's environment variable) and its permissions.";
  if (status === 404) return "Check the model id and the baseUrl in piAgentHarness({ models }).";
  if (status === 400 || status === 413 || status === 422) return "The provider rejected the request as sent; its message above says which part (often context length or a tool schema).";
  if (status === undefined) return "The provider ended the reply itself (a refusal or content filter, or an error it does not retry); its message above says why.";
  return "Read the provider's message above; the request cannot succeed as sent.";
}
