import { AssemblyLineError, type HarnessContinuation, type JsonValue, type ModelToolCall } from "@assemblyline-agents/core";
import type { Message } from "@mariozechner/pi-ai";

export const PI_HARNESS_NAME = "pi";
export const PI_CONTINUATION_VERSION = 1;

/**
 * `data` of a version-1 pi continuation. The system prompt and tools are not
 * kept: the resume's context supplies them, under the same agent revision.
 */
export interface PiContinuationData {
  /** The spec the run was paused under (diagnostics only; the resume's spec is used). */
  modelSpec: string;
  /** The pi-ai transcript so far, starting with the context policy's history. */
  messages: Message[];
  /** Tool calls of the last model reply still to be answered, in order; the first one paused. */
  pendingToolCalls: ModelToolCall[];
  /** Model calls made so far in this run; the next is journaled as `model:<modelCalls + 1>`. */
  modelCalls: number;
  /** Tool calls of the last model reply that are not run, by id, with the error the model is shown instead. */
  refusedToolCalls?: Record<string, string> | undefined;
}

export function writeContinuation(agentRevision: string, data: PiContinuationData): HarnessContinuation {
  return {
    version: PI_CONTINUATION_VERSION,
    harness: PI_HARNESS_NAME,
    agentRevision,
    // A JSON round trip drops `undefined` fields so the checkpoint stores exactly what it returns.
    data: JSON.parse(JSON.stringify(data)) as JsonValue,
  };
}

/** The data of a continuation this engine made, or AL_ERR_CONTINUATION_VERSION. */
export function readContinuation(continuation: HarnessContinuation): PiContinuationData {
  if (continuation.harness !== PI_HARNESS_NAME || continuation.version !== PI_CONTINUATION_VERSION) {
    throw new AssemblyLineError(
      "AL_ERR_CONTINUATION_VERSION",
      `The paused run's continuation was made by engine "${continuation.harness}" format ${continuation.version}; pi reads only "${PI_HARNESS_NAME}" format ${PI_CONTINUATION_VERSION}.`,
      {
        fix: `Resume the run with the engine and version that paused it (${continuation.harness} v${continuation.version}), or start a new run.`,
        details: { harness: continuation.harness, version: continuation.version },
      },
    );
  }
  const data = continuation.data as Partial<PiContinuationData> | null;
  if (
    !data ||
    typeof data !== "object" ||
    !Array.isArray(data.messages) ||
    !Array.isArray(data.pendingToolCalls) ||
    typeof data.modelCalls !== "number"
  ) {
    throw new AssemblyLineError("AL_ERR_CONTINUATION_VERSION", "The paused run's pi continuation (format 1) is malformed: it lacks messages, pendingToolCalls or modelCalls.", {
      fix: "The checkpoint was altered or written by another program; start a new run.",
    });
  }
  const refused = data.refusedToolCalls;
  return {
    modelSpec: String(data.modelSpec ?? ""),
    messages: data.messages,
    pendingToolCalls: data.pendingToolCalls,
    modelCalls: data.modelCalls,
    // Optional: continuations written before calls were screened have none.
    ...(refused && typeof refused === "object" && !Array.isArray(refused) ? { refusedToolCalls: refused } : {}),
  };
}
