import { AssemblyLineError, type RuntimeLogger } from "@assemblyline-agents/core";
import { stream, type Api, type AssistantMessage, type Context, type Model } from "@mariozechner/pi-ai";
import type { PiRetryOptions } from "./options.js";
import { watchProviderResponse, type ProviderResponse } from "./provider-response.js";
import { parseRetryAfter, retryTransientFailures } from "./retry.js";
import { callSecrets, redactSecrets } from "./secret-redaction.js";

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
  logger: RuntimeLogger;
}

/** A model reply, with the raw argument text of each tool call by its content index. */
export interface ModelCallReply {
  message: AssistantMessage;
  rawToolArguments: Map<number, string>;
}

/** One attempt's failure as the provider reported it. */
export class ProviderCallFailure extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly retryable: boolean,
    readonly retryAfterMs: number | undefined,
  ) {
    super(message);
    this.name = "ProviderCallFailure";
  }
}

/**
 * Ask the model once, streaming text deltas as they arrive, and retry 429/5xx
 * answers. The SDKs under pi-ai retry by themselves (maxRetries 2, uncapped
 * `retry-after`, a wait that ignores abort), so they are told `maxRetries: 0` and
 * this is the only retry layer.
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
        classify: (error) => (error instanceof ProviderCallFailure ? { retryable: error.retryable, retryAfterMs: error.retryAfterMs, error } : undefined),
        onRetry: ({ attempt, delayMs, error }) =>
          request.logger.warn({ modelSpec: spec, attempt, status: error.status, delayMs, error: error.message }, "model call failed; retrying"),
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
  const { value: message, response } = await watchProviderResponse(async () => {
    const events = stream(model, context, {
      ...(request.apiKey !== undefined ? { apiKey: request.apiKey } : {}),
      signal,
      maxRetries: 0,
      sessionId: request.sessionId,
      ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {}),
    });
    for await (const event of events) {
      if (event.type === "text_delta") request.onTextDelta(event.delta);
      else if (event.type === "toolcall_delta") rawToolArguments.set(event.contentIndex, (rawToolArguments.get(event.contentIndex) ?? "") + event.delta);
    }
    return events.result();
  });
  if (signal.aborted || message.stopReason === "aborted") throw signal.reason ?? new Error(message.errorMessage ?? "aborted");
  // Redacted before anything reads it: the message reaches the run's error, `model.failed`, logs and failure deliveries.
  if (message.stopReason === "error") throw classifyFailure(redactSecrets(message.errorMessage ?? "unknown provider error", callSecrets(model, request.apiKey)), response);
  return { message, rawToolArguments };
}

/*
 * The status comes from the observed HTTP response; when none was observed (a
 * non-undici fetch) it is read from the message, which the OpenAI and Anthropic
 * SDKs start with the status code ("429 Rate limit reached ...").
 */
function classifyFailure(errorMessage: string, response: ProviderResponse | undefined): ProviderCallFailure {
  const failedResponse = response && response.status >= 400 ? response : undefined;
  const status = failedResponse?.status ?? leadingStatus(errorMessage);
  // The SDKs' messages for a connection that failed before any response.
  const connectionLost = !response && /^(Connection error\.|Request timed out\.)/.test(errorMessage);
  const retryable = status === 429 || (status !== undefined && status >= 500 && status <= 599) || connectionLost;
  const retryAfterMs = failedResponse ? parseRetryAfter(failedResponse.headers) : undefined;
  return new ProviderCallFailure(errorMessage, status, retryable, retryAfterMs);
}

function leadingStatus(errorMessage: string): number | undefined {
  const match = /^([1-5]\d\d)\b/.exec(errorMessage);
  return match ? Number(match[1]) : undefined;
}

function providerError(spec: string, failure: ProviderCallFailure, attempts: number): AssemblyLineError {
  const answered = failure.status !== undefined ? `answered ${failure.status}` : "failed";
  if (failure.retryable) {
    return new AssemblyLineError("AL_ERR_MODEL_PROVIDER", `${spec}: the provider ${answered} on all ${attempts} attempts: ${failure.message}`, {
      fix: "The provider is failing or rate limiting; try the run again later, or raise piAgentHarness({ retry: { maxRetries } }).",
      details: { spec, status: failure.status ?? null, attempts },
      cause: failure,
    });
  }
  return new AssemblyLineError("AL_ERR_MODEL_PROVIDER", `${spec}: the provider ${answered}: ${failure.message}`, {
    fix: fixForStatus(failure.status),
    details: { spec, status: failure.status ?? null, attempts },
    cause: failure,
  });
}

function fixForStatus(status: number | undefined): string {
  if (status === 401 || status === 403) return "Check the API key (piAgentHarness({ apiKeys }) or the provider's environment variable) and its permissions.";
  if (status === 404) return "Check the model id and the baseUrl in piAgentHarness({ models }).";
  if (status === 400 || status === 413 || status === 422) return "The provider rejected the request as sent; its message above says which part (often context length or a tool schema).";
  return "Read the provider's message above; the request cannot succeed as sent.";
}
