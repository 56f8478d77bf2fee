import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AssemblyLineError, type AgentHarness, type HarnessContext, type HarnessTurnInput, type HarnessTurnResult } from "@assemblyline-agents/core";
import { readContinuation, writeContinuation, type CodexContinuationData } from "./continuation.js";
import { functionOutputItem, toResponseItems, toolOutputText, userItem } from "./items.js";
import { checkCodexOptions } from "./config-schema.js";
import { CODEX_HARNESS_NAME, CODEX_PROVIDER, appServerArgs, refuseReservedToolNames, refuseRouteOwnedConfig, resolveCodexCommand, type CodexHarnessOptions } from "./options.js";
import { runAppServerTurn } from "./turn.js";

/**
 * The `openai-codex/*` engine: each turn runs on the official Codex
 * app-server, with the run's tools offered as dynamic tools whose calls are
 * answered by the runtime's pipeline (policy, schema, approval, journal).
 * Nothing lives in the app-server between turns: a pause returns the thread's
 * items as an opaque continuation, and a resume, in this or any process,
 * answers the pending calls first and rebuilds the thread from it.
 */
export function codexAgentHarness(options: CodexHarnessOptions = {}): AgentHarness {
  checkCodexOptions(options);
  refuseRouteOwnedConfig(options.config);
  return {
    name: CODEX_HARNESS_NAME,
    runTurn: (input, ctx) => runCodexTurn(input, ctx, options),
  };
}

async function runCodexTurn(input: HarnessTurnInput, ctx: HarnessContext, options: CodexHarnessOptions): Promise<HarnessTurnResult> {
  refuseReservedToolNames(input.context.tools);
  const state: CodexContinuationData = input.continuation ? readContinuation(input.continuation) : { model: modelOf(input.modelSpec), items: [], pending: [], modelCalls: 0 };
  let text: string | undefined;
  if (!input.continuation) {
    // The last user message starts the Codex turn; everything before it is history.
    const messages = input.context.messages;
    const last = messages.at(-1);
    const history = last?.role === "user" ? messages.slice(0, -1) : messages;
    state.items.push(...toResponseItems(history));
    if (last?.role === "user") {
      state.items.push(userItem(last.content));
      text = last.content;
    }
  }
  // Calls left open when the run paused are answered first, through the pipeline.
  while (state.pending.length > 0) {
    const call = state.pending[0]!;
    const outcome = await ctx.callTool({ id: call.journalId ?? call.callId, name: call.tool, input: call.arguments });
    if (outcome.status === "paused") return { status: "paused", continuation: writeContinuation(input.agentRevision, state) };
    if (outcome.status === "failed") return { status: "completed", response: { text: outcome.output.error } };
    state.items.push(functionOutputItem(call.callId, toolOutputText(outcome.output)));
    state.pending.shift();
  }
  // A run cancelled meanwhile (or before the turn) starts no app-server: it would make a model call.
  ctx.signal.throwIfAborted();
  const env = options.env ?? process.env;
  const cwd = await mkdtemp(join(tmpdir(), "al-codex-"));
  try {
    // On a fresh turn the user message goes in as turn input; on a resume the items already hold it.
    const inject = text === undefined ? state.items.slice() : state.items.slice(0, -1);
    return await runAppServerTurn({ command: withArgs(resolveCodexCommand(options, env), appServerArgs(options)), env, cwd }, input, ctx, state, { inject, text });
  } finally {
    await rm(cwd, { recursive: true, force: true });
  }
}

function withArgs(command: { file: string; args: string[] }, args: string[]): { file: string; args: string[] } {
  return { file: command.file, args: [...command.args, ...args] };
}

function modelOf(modelSpec: string): string {
  const [provider, ...rest] = modelSpec.split("/");
  const model = rest.join("/");
  if (provider !== CODEX_PROVIDER || model === "") {
    throw new AssemblyLineError("AL_ERR_MODEL_UNKNOWN", `the codex engine serves ${CODEX_PROVIDER}/<model> specs, not "${modelSpec}"`, {
      fix: `Use a model spec such as "${CODEX_PROVIDER}/gpt-5.1-codex".`,
    });
  }
  return model;
}
