import { AssemblyLineError, type HarnessContinuation, type JsonValue } from "@assemblyline-agents/core";
import { CODEX_HARNESS_NAME } from "./options.js";

export const CODEX_CONTINUATION_VERSION = 1;

/** A raw Responses API item, as `thread/inject_items` takes it. */
export type ResponseItem = Record<string, JsonValue>;

/** A tool call the app-server asked for that was not answered when the run paused. */
export interface PendingCodexCall {
  /** The model's id of the call (its function_call item's call_id). */
  callId: string;
  /**
   * The id the runtime journals the call under (see turn.ts: unique within the run, and the same for
   * a call re-asked after a crash). Absent in continuations of earlier versions that journaled the
   * call under callId.
   */
  journalId?: string;
  tool: string;
  arguments: JsonValue;
}

/**
 * What a paused Codex run carries: the model-visible items of this run so far
 * (user input, assistant messages, function calls and their outputs) and the
 * calls still to answer. A new app-server in any process rebuilds the thread
 * from it (`thread/inject_items`), so no Codex session state is needed.
 */
export interface CodexContinuationData {
  model: string;
  items: ResponseItem[];
  pending: PendingCodexCall[];
  /** Model calls so far (one that paused on a tool call included), for usage ids and the step keys of model and tool calls, unique across resumes. */
  modelCalls: number;
}

export function writeContinuation(agentRevision: string, data: CodexContinuationData): HarnessContinuation {
  return { version: CODEX_CONTINUATION_VERSION, harness: CODEX_HARNESS_NAME, agentRevision, data: data as unknown as JsonValue };
}

export function readContinuation(continuation: HarnessContinuation): CodexContinuationData {
  const data = continuation.data as unknown as CodexContinuationData;
  if (
    continuation.harness !== CODEX_HARNESS_NAME ||
    continuation.version !== CODEX_CONTINUATION_VERSION ||
    typeof data !== "object" ||
    data === null ||
    !Array.isArray(data.items) ||
    !Array.isArray(data.pending)
  ) {
    throw new AssemblyLineError(
      "AL_ERR_CONTINUATION_VERSION",
      `this run's continuation was made by ${continuation.harness} v${continuation.version}, not the codex engine v${CODEX_CONTINUATION_VERSION}`,
      { fix: "Resume it with the engine (and version) that paused it." },
    );
  }
  return data;
}
