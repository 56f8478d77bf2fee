import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { AssemblyLineError, canonicalJson, type HarnessContext, type HarnessTurnInput, type HarnessTurnResult, type JsonValue, type ToolCallOutcome } from "@assemblyline-agents/core";
import { CodexAppServer, type ServerRequest } from "./app-server.js";
import { checkLoginSession } from "./auth.js";
import { writeContinuation, type CodexContinuationData } from "./continuation.js";
import { assistantItem, functionCallItem, functionOutputItem, toolOutputText } from "./items.js";
import { CODEX_PROVIDER, mcpServersOff } from "./options.js";
import { providerFailure, redactProviderMessage, retryOverrides } from "./provider-failure.js";

/**
 * How long a paused turn waits for the usage of the model call that paused
 * (the server reports it once `turn/interrupt` ends the turn); past it the call
 * is journaled with its usage unknown.
 */
export const PAUSED_CALL_USAGE_WAIT_MS = 2_000;

/** A model call's token counts, as the usage store and `model.response` keep them. */
type CallUsage = { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number; costUsd: number };

/** How a turn on the app-server ended. */
type TurnEnd = { kind: "completed"; text: string } | { kind: "paused" } | { kind: "tool_failed"; error: string };

/**
 * One turn on a fresh app-server: an ephemeral thread whose only tools are the
 * run's (as dynamic tools), rebuilt from the continuation's items when
 * resuming. Every `item/tool/call` the server sends is answered by the
 * runtime's tool pipeline (`ctx.callTool`); a call that pauses (approval,
 * question) ends the turn at once with a continuation, and the server is
 * stopped with the call unanswered.
 */
export async function runAppServerTurn(
  server: { command: { file: string; args: string[] }; env: Record<string, string | undefined>; cwd: string },
  input: HarnessTurnInput,
  ctx: HarnessContext,
  state: CodexContinuationData,
  start: { inject: CodexContinuationData["items"]; text: string | undefined },
): Promise<HarnessTurnResult> {
  let settle!: (end: TurnEnd) => void;
  let fail!: (error: unknown) => void;
  const ended = new Promise<TurnEnd>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  // Rejected when the server exits, which also happens after a turn that ended another way.
  ended.catch(() => undefined);
  let stopped = false;
  let threadId: string | undefined;
  let lastMessage = "";
  const background: Array<Promise<void>> = [];
  /** The tool calls' decisions, one after another in the order the server asked: answered, kept for the resume, or left open. */
  let toolChain: Promise<unknown> = Promise.resolve();
  /** When the model call the app-server is making now began; undefined while none is (a tool runs, or the turn ended). */
  let modelCallSince: string | undefined;
  /** Text of the model call under way was streamed to the host: void if Codex re-makes the call's stream. */
  let streamedText = false;
  /**
   * The model call whose tool calls the server is asking for, numbered when its first call arrives;
   * undefined once its usage came. The server reports a call's usage only after its tool calls are
   * answered, so the calls of one response arrive between two usage notifications.
   */
  let callsOf: number | undefined;
  /** Journal claims made this turn, per model call and call content, so identical calls of one response each take their own. */
  const claims = new Map<string, number>();
  /** The model call one of whose tool calls paused the turn, and the wait for its usage. */
  let pausedCall: number | undefined;
  /** Seen a `turn/completed`: the server asks for no more tool calls of this turn. */
  let turnOver!: () => void;
  const turnEnded = new Promise<void>((resolve) => (turnOver = resolve));
  /** The runtime refused to go on while a paused turn's other calls were kept (the run's lease lost): the turn fails with it. */
  let refusedAfterPause: unknown;
  let pausedUsage!: (reported: { usage: CallUsage; usageId: string }) => void;
  const pausedCallUsage = new Promise<{ usage: CallUsage; usageId: string }>((resolve) => (pausedUsage = resolve));

  /**
   * Decide one tool call: answer it through the pipeline, keep it for the resume (a call of the
   * paused turn), or leave it open (`undefined`: the turn failed, or this call paused it). Decided
   * one at a time, so a call that pauses the turn never holds back the decisions of the calls after it.
   */
  const decideTool = async (request: ServerRequest, modelCall: number): Promise<{ answer: unknown } | undefined> => {
    const callId = String(request.params.callId);
    const tool = String(request.params.tool);
    const args = (request.params.arguments ?? {}) as JsonValue;
    // A tool failed the turn, or the runtime refused to go on: no call is answered any more.
    if (stopped && pausedCall === undefined) return undefined;
    const digest = contentDigest(tool, args);
    const content = `${modelCall}:${digest}`;
    const claim = (claims.get(content) ?? 0) + 1;
    claims.set(content, claim);
    let journalId: string;
    let outcome: ToolCallOutcome;
    try {
      journalId = await journalIdOf(ctx, `codex:call:${content}:${claim}`, { callId, journalId: ownJournalId(modelCall, callId, digest, claim), tool, arguments: args });
      if (pausedCall !== undefined) {
        // Another call of the paused turn (the same response's, asked for after the one that paused):
        // kept with it, so the resume runs it (or asks for its approval) before the model goes on.
        state.pending.push({ callId, journalId, tool, arguments: args });
        return undefined;
      }
      outcome = await ctx.callTool({ id: journalId, name: tool, input: args });
    } catch (error) {
      // The runtime refused to go on (a budget reached, the run's lease lost, a state error): the
      // turn fails with its error, as on every engine. Answered as a tool error instead, the model
      // would be asked again, a billed call, and a run that lost its lease could even complete.
      if (pausedCall !== undefined) refusedAfterPause ??= error;
      stopped = true;
      fail(error);
      return undefined;
    }
    if (outcome.status === "completed") {
      const text = toolOutputText(outcome.output);
      state.items.push(functionOutputItem(callId, text));
      // The answer goes back to the app-server, which asks the model again with it.
      modelCallSince = new Date().toISOString();
      return { answer: { success: !outcome.isError, contentItems: [{ type: "inputText", text }] } };
    }
    stopped = true;
    if (outcome.status === "paused") {
      pausedCall = modelCall;
      state.pending.push({ callId, journalId, tool, arguments: args });
      settle({ kind: "paused" });
    } else {
      settle({ kind: "tool_failed", error: outcome.output.error });
    }
    // Never answered: the server is stopped with this call open.
    return undefined;
  };

  const appServer = new CodexAppServer(
    server.command,
    server.env,
    {
      onNotification(method, params) {
        if (threadId !== undefined && params.threadId !== undefined && params.threadId !== threadId) return;
        if (method === "item/agentMessage/delta" && typeof params.delta === "string") {
          streamedText = true;
          ctx.textDelta(params.delta);
        }
        else if (method === "item/completed") {
          const item = params.item as { type?: string; text?: string };
          if (item?.type === "agentMessage" && typeof item.text === "string") {
            lastMessage = item.text;
            state.items.push(assistantItem(item.text));
          }
        } else if (method === "thread/tokenUsage/updated") {
          const last = (params.tokenUsage as { last?: Record<string, number> } | undefined)?.last;
          if (last) {
            modelCallSince = undefined;
            streamedText = false;
            // A response with tool calls was numbered when its first call arrived; one without is numbered now.
            const call = callsOf ?? (state.modelCalls += 1);
            callsOf = undefined;
            const key = `model:${call}`;
            // Taken now: the next call's notification may come before this one's check resolves.
            const usageId = `${input.runId}:codex:${String(params.turnId)}:${call}`;
            const usage = usageOf(last);
            // The paused call is journaled by the turn's end, once this usage is known.
            if (call === pausedCall) {
              pausedUsage({ usage, usageId });
              return;
            }
            // The app-server calls the model itself, so the call is journaled once it is made: the
            // runtime counts it against the run's budgets (maxTurns, maxTokens, ...) and refuses the
            // first call past one, ending the turn; a call re-made after a crash replays, uncounted.
            const counted = stopped
              ? Promise.resolve()
              : ctx
                  .modelCall(key, async () => {
                    await ctx.emit("model.response", { step: key, provider: CODEX_PROVIDER, model: state.model, usage });
                    return usage;
                  }, { metadata: { modelSpec: input.modelSpec } })
                  .then(() => undefined);
            // The turn id is new on every app-server, so a turn re-run after a crash records its own calls.
            const record = () => ctx.recordUsage({ id: usageId, provider: CODEX_PROVIDER, model: state.model, ...usage });
            background.push(
              counted.then(
                // After the check, which reads the usage recorded before this call.
                record,
                (error: unknown) => {
                  stopped = true;
                  fail(error);
                  // The app-server made the call before the check refused it: its tokens are spent all the same.
                  return record().catch((recordError: unknown) => ctx.logger.warn({ err: String(recordError) }, "recording the usage of a refused codex model call failed"));
                },
              ),
            );
          }
        } else if (method === "turn/completed") {
          turnOver();
          const turn = params.turn as { status?: string; error?: { message?: string } | null };
          if (turn?.status === "completed") settle({ kind: "completed", text: lastMessage });
          else if (!stopped) fail(providerFailure(turn?.status, turn?.error?.message, server.env));
        } else if (method === "error" && !stopped) {
          const error = params.error as { message?: string } | undefined;
          if (params.willRetry === true) {
            // Codex re-makes a stream that broke: the reply streams again from its start, so what the
            // host was shown of it is void (as on the Pi engine, which retries itself).
            if (streamedText) ctx.textRestart?.();
            streamedText = false;
          } else {
            // Redacted as the run's error is: the provider may echo the key it was sent, and logs travel further than the run.
            ctx.logger.warn({ event: "codex.error", runId: input.runId, err: redactProviderMessage(error?.message ?? "no error message", server.env) }, "the Codex app-server reported an error");
          }
        }
      },
      async onRequest(request) {
        if (request.method === "item/tool/call") {
          if (threadId !== undefined && request.params.threadId !== threadId) throw new Error("unknown thread");
          modelCallSince = undefined;
          state.items.push(functionCallItem(String(request.params.callId), String(request.params.tool), (request.params.arguments ?? {}) as JsonValue));
          // Counted in state at once: a pause keeps this call's number taken, so the next response after a resume has its own.
          const modelCall = (callsOf ??= state.modelCalls += 1);
          const decided = toolChain.then(() => decideTool(request, modelCall));
          toolChain = decided.catch(() => undefined);
          const decision = await decided;
          // A call left open is never answered: the server is stopped with it open.
          return decision ? decision.answer : new Promise(() => undefined);
        }
        // Codex's own tools are switched off; anything else it asks (a shell approval, user input) is refused.
        throw new Error(`${request.method} is not available: tools run through the Assembly Line runtime`);
      },
    },
    ctx.logger,
  );
  /**
   * The model call whose tool call paused the turn is journaled too, so it is
   * counted against the run's budgets like every other: the server reports a
   * call's usage only once its tool calls are answered, and this one never is.
   * Interrupting the turn makes the server report it; a refusal (a budget
   * reached) fails the turn instead of pausing it.
   */
  const journalPausedCall = async (turnId: string | undefined): Promise<void> => {
    if (pausedCall === undefined) return;
    const key = `model:${pausedCall}`;
    void appServer.request("turn/interrupt", { threadId, turnId }).catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const reported = await Promise.race([
      pausedCallUsage,
      appServer.closed.then(() => undefined),
      new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), PAUSED_CALL_USAGE_WAIT_MS))),
    ]);
    clearTimeout(timer);
    const record = async () => {
      if (reported) await ctx.recordUsage({ id: reported.usageId, provider: CODEX_PROVIDER, model: state.model, ...reported.usage });
    };
    try {
      await ctx.modelCall(key, async () => {
        // Without usage when the server did not report it in time: the call is counted all the same.
        await ctx.emit("model.response", { step: key, provider: CODEX_PROVIDER, model: state.model, ...(reported ? { usage: reported.usage } : {}) });
        return reported?.usage ?? null;
      }, { metadata: { modelSpec: input.modelSpec } });
    } catch (error) {
      // The call was made before the check refused it: its tokens are spent all the same.
      await record().catch((recordError: unknown) => ctx.logger.warn({ err: String(recordError) }, "recording the usage of a refused codex model call failed"));
      throw error;
    }
    await record();
  };

  /** Wait for every tool call asked for so far, including those asked for while waiting. */
  const settledToolCalls = async (): Promise<void> => {
    for (let chain = toolChain; ; chain = toolChain) {
      await chain;
      if (chain === toolChain) return;
    }
  };

  const abort = () => void appServer.close();
  ctx.signal.addEventListener("abort", abort, { once: true });
  // Aborted while the app-server started: no abort event is coming, so close it now.
  if (ctx.signal.aborted) abort();
  try {
    void appServer.closed.then(() =>
      // A cancelled run stops the app-server itself: the run fails with the cancellation's reason, as on every engine.
      fail(
        ctx.signal.aborted
          ? ctx.signal.reason
          : new AssemblyLineError("AL_ERR_CODEX_APP_SERVER", `codex app-server exited during the turn ${appServer.exitReason ?? "(no exit status)"}`, {
              fix: "Check the codex binary (`npx codex --version`), its CODEX_HOME and the host's memory; a signal such as SIGKILL often means the process was killed from outside.",
            }),
      ),
    );
    await appServer.request("initialize", { clientInfo: { name: "assembly-line", title: "Assembly Line", version: "0.1.0" }, capabilities: { experimentalApi: true } });
    appServer.notify("initialized");
    await checkLoginSession(appServer, server.env);
    const effective = await appServer.request<{ config?: Record<string, unknown> }>("config/read", { cwd: server.cwd });
    const started = await appServer.request<{ thread: { id: string } }>("thread/start", {
      config: { ...retryOverrides(effective.config ?? {}), ...mcpServersOff(effective.config ?? {}) },
      model: state.model,
      ephemeral: true,
      cwd: server.cwd,
      approvalPolicy: "never",
      sandbox: "read-only",
      baseInstructions: input.context.instructions,
      dynamicTools: input.context.tools.map((tool) => ({ type: "function", name: tool.name, description: tool.description, inputSchema: tool.inputSchema })),
    });
    threadId = started.thread.id;
    await ctx.emit("codex.thread_started", { threadId, model: state.model, resumed: input.continuation !== undefined });
    if (start.inject.length > 0) await appServer.request("thread/inject_items", { threadId, items: start.inject });
    modelCallSince = new Date().toISOString();
    const turn = await appServer.request<{ turn?: { id?: string } }>("turn/start", { threadId, input: start.text === undefined ? [] : [{ type: "text", text: start.text, text_elements: [] }] });
    const end = await ended;
    await Promise.all(background);
    if (end.kind === "paused") {
      await journalPausedCall(turn.turn?.id);
      // The interrupt ends the turn: every call of it the server asks for by then is kept for the resume.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([turnEnded, appServer.closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, PAUSED_CALL_USAGE_WAIT_MS)))]);
      clearTimeout(timer);
      await toolChain;
      if (refusedAfterPause !== undefined) throw refusedAfterPause;
      // A copy: the server, stopped below, may still write to state until it exits.
      return { status: "paused", continuation: writeContinuation(input.agentRevision, structuredClone(state)) };
    }
    if (end.kind === "tool_failed") return { status: "completed", response: { text: end.error } };
    return { status: "completed", response: { text: end.text } };
  } catch (error) {
    // A tool call still running (the app-server died under it, or a budget refused a parallel call)
    // settles first: the run is failed and its lease released only once the tool's side effect is done.
    await settledToolCalls();
    const failure = ctx.signal.aborted ? ctx.signal.reason : error;
    // A model call the app-server was making when the turn failed leaves `model.failed`, as a failed call does on every engine.
    if (modelCallSince !== undefined && !stopped) await recordModelFailed(ctx, state.modelCalls + 1, modelCallSince, failure);
    throw failure;
  } finally {
    ctx.signal.removeEventListener("abort", abort);
    await appServer.close();
  }
}

function usageOf(last: Record<string, number>): CallUsage {
  return {
    // The app-server's inputTokens include the cached ones (OpenAI's input_tokens); a usage record keeps them apart.
    inputTokens: Math.max(0, (last.inputTokens ?? 0) - (last.cachedInputTokens ?? 0)),
    outputTokens: last.outputTokens ?? 0,
    cacheReadTokens: last.cachedInputTokens ?? 0,
    cacheWriteTokens: last.cacheWriteInputTokens ?? 0,
    // Billed to the Codex login (a ChatGPT plan or its key); no per-token price is known here.
    costUsd: 0,
  };
}

async function recordModelFailed(ctx: HarnessContext, call: number, startedAt: string, error: unknown): Promise<void> {
  const data: Record<string, JsonValue> = { key: `model:${call}`, startedAt, error: error instanceof Error ? error.message : String(error) };
  if (error instanceof AssemblyLineError) data.code = error.code;
  else if (error instanceof Error) data.errorClass = error.name;
  await ctx.emit("model.failed", data).catch((emitError: unknown) => ctx.logger.warn({ err: String(emitError) }, "recording model.failed failed"));
}

/**
 * The id a tool call is journaled under. A turn that re-runs after a crash asks
 * the model again, and the model names its calls anew (`call_…` ids are fresh
 * on every response), so the call's own id would not find the completed call
 * in the journal and the tool would run twice. Nor would its place: the server
 * asks for a response's parallel calls in no fixed order. So the call is looked
 * up by what it is: the run's model call that made it, its tool and canonical
 * arguments, and which of the identical calls of that response it is (the step
 * `codex:call:<model call>:<digest>:<n>`), which holds the journal id the call
 * was first given. The same call made again by the same model call replays; a
 * call the model changed is new work.
 *
 * Journals written before the step held a journal id hold the call's first
 * model id, and replay under it.
 */
async function journalIdOf(ctx: HarnessContext, key: string, call: { callId: string; journalId: string; tool: string; arguments: JsonValue }): Promise<string> {
  const first: { callId: string; journalId?: string; tool: string; arguments: JsonValue } = await ctx.step(key, () => call);
  if (first.tool !== call.tool || !isDeepStrictEqual(first.arguments, call.arguments)) return call.journalId;
  return typeof first.journalId === "string" ? first.journalId : first.callId;
}

/**
 * A journal id unique within the run: the model's id alone is not (a provider
 * may count `call_0` from the start of every response, and a model asked again
 * after a crash may give a changed call an id the first answer used). It names
 * the run's model call, the model's id, the call's content and which of the
 * response's identical calls it is: `model<n>_<call id>_<digest>[_<k>]`. The
 * Responses items keep the model's id.
 */
function ownJournalId(modelCall: number, callId: string, digest: string, claim: number): string {
  return `model${modelCall}_${callId}_${digest.slice(0, 12)}${claim > 1 ? `_${claim}` : ""}`;
}

function contentDigest(tool: string, args: JsonValue): string {
  return createHash("sha256").update(canonicalJson([tool, args])).digest("hex").slice(0, 32);
}
