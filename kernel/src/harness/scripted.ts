import { readFileSync } from "node:fs";
import {
  AssemblyLineError,
  type AgentHarness,
  type HarnessContext,
  type HarnessContinuation,
  type HarnessTurnInput,
  type HarnessTurnResult,
  type JsonValue,
  type ModelToolCall,
} from "@assemblyline-agents/core";

/** One scripted model response: tool calls, or final text. */
export type ScriptedTurn =
  | { toolCalls: Array<{ name: string; input: JsonValue; id?: string }>; text?: string }
  | { text: string };

export interface ModelScript {
  turns: ScriptedTurn[];
  /**
   * Scripts for subagents that inherit this model, by folder name; nested
   * subagents under their parent's entry (`subagents.researcher.subagents.fact_checker`).
   */
  subagents?: Record<string, ModelScript>;
}

const CONTINUATION_VERSION = 1;
export const SCRIPTED_PREFIX = "scripted:";

interface ScriptedState {
  /** Index of the next model response to take. */
  nextTurn: number;
  /** Tool calls of the current response not yet settled. */
  pending: ModelToolCall[];
}

/** Check a parsed script and name the first problem. */
export function parseModelScript(value: unknown, origin: string): ModelScript {
  const fail = (problem: string): never => {
    throw new AssemblyLineError("AL_ERR_SCRIPTED_MODEL", `${origin}: ${problem}`, {
      fix: 'Write { "turns": [ { "toolCalls": [ { "name": "record_note", "input": { "note": "hi" } } ] }, { "text": "Done." } ] }.',
    });
  };
  if (typeof value !== "object" || value === null || !Array.isArray((value as ModelScript).turns)) fail("must be an object with a turns array");
  const turns = (value as ModelScript).turns;
  if (turns.length === 0) fail("turns is empty");
  turns.forEach((turn, index) => {
    if (typeof turn !== "object" || turn === null) return fail(`turns[${index}] is not an object`);
    if ("toolCalls" in turn) {
      if (!Array.isArray(turn.toolCalls) || turn.toolCalls.length === 0) fail(`turns[${index}].toolCalls must be a non-empty array`);
      turn.toolCalls.forEach((call, callIndex) => {
        if (typeof call?.name !== "string" || call.name === "") fail(`turns[${index}].toolCalls[${callIndex}].name must be a tool name`);
      });
    } else if (typeof (turn as { text?: unknown }).text !== "string") {
      fail(`turns[${index}] needs either toolCalls or text`);
    }
  });
  const subagents = (value as ModelScript).subagents;
  if (subagents !== undefined) {
    if (typeof subagents !== "object" || subagents === null || Array.isArray(subagents)) fail("subagents must map subagent names to scripts");
    for (const [name, script] of Object.entries(subagents)) parseModelScript(script, `${origin} subagents.${name}`);
  }
  return value as ModelScript;
}

/**
 * The script a run follows: the root's turns, or `subagents.<name>` for a
 * subagent's run. A script without a `subagents` key serves every run that
 * uses it from its top-level turns (a subagent with its own scripted model file).
 */
function scriptFor(script: ModelScript, subagent: string | undefined): ModelScript {
  if (!subagent || script.subagents === undefined) return script;
  let current: ModelScript | undefined = script;
  for (const name of subagent.split("/")) current = current?.subagents?.[name];
  if (!current) {
    throw new AssemblyLineError("AL_ERR_SCRIPTED_MODEL", `the script has no turns for subagent "${subagent}"`, {
      fix: `Add "subagents": { "${subagent.split("/").join('": { "subagents": { "')}": { "turns": [...] } } to the script, or give the subagent its own scripted model file.`,
    });
  }
  return current;
}

export function loadModelScript(file: string): ModelScript {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new AssemblyLineError("AL_ERR_SCRIPTED_MODEL", `cannot read the model script ${file}`, {
      fix: "Pass --model scripted:<path to a JSON file> that exists.",
    });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new AssemblyLineError("AL_ERR_SCRIPTED_MODEL", `${file} is not valid JSON: ${(error as Error).message}`);
  }
  return parseModelScript(parsed, file);
}

/**
 * A deterministic engine for tests, evals and offline demos: each model call
 * takes the next scripted response. Model calls are journaled like a real
 * engine's, so resumes and crash recovery replay instead of advancing.
 */
export function scriptedHarness(rootScript: ModelScript, options: { name?: string } = {}): AgentHarness {
  const name = options.name ?? "scripted";
  return {
    name,
    async runTurn(input: HarnessTurnInput, ctx: HarnessContext): Promise<HarnessTurnResult> {
      const script = scriptFor(rootScript, input.subagent);
      const state = restore(input.continuation, name);
      const pause = (): HarnessTurnResult => ({
        status: "paused",
        continuation: { version: CONTINUATION_VERSION, harness: name, agentRevision: input.agentRevision, data: state as unknown as JsonValue },
      });
      for (;;) {
        while (state.pending.length > 0) {
          const outcome = await ctx.callTool(state.pending[0]!);
          if (outcome.status === "paused") return pause();
          if (outcome.status === "failed") return { status: "completed", response: { text: outcome.output.error } };
          state.pending.shift();
        }
        const turnIndex = state.nextTurn;
        const turn = await ctx.step(`model:${turnIndex}`, async () => {
          const next = script.turns[turnIndex];
          if (!next) {
            throw new AssemblyLineError("AL_ERR_SCRIPTED_MODEL", `the script has ${script.turns.length} turns and the run asked for turn ${turnIndex + 1}`, {
              fix: "Add a final { \"text\": \"...\" } turn, or more turns for the extra model calls.",
            });
          }
          const response = { text: "text" in next && next.text !== undefined ? next.text : "", toolCalls: "toolCalls" in next ? next.toolCalls.map((call, i) => ({ id: call.id ?? `call_${turnIndex}_${i}`, name: call.name, input: call.input ?? {} })) : [] };
          if (response.text) ctx.textDelta(response.text);
          // offeredTools: the tools the model was given for this call, so evals and tests can check the model input.
          await ctx.emit("model.response", {
            harness: name,
            turn: turnIndex,
            text: response.text,
            toolCalls: response.toolCalls.map((call) => call.name),
            offeredTools: input.context.tools.map((tool) => tool.name),
          });
          return response as { text: string; toolCalls: ModelToolCall[] };
        });
        state.nextTurn += 1;
        if (turn.toolCalls.length === 0) return { status: "completed", response: { text: turn.text } };
        state.pending = [...turn.toolCalls];
      }
    },
  };
}

function restore(continuation: HarnessContinuation | undefined, name: string): ScriptedState {
  if (!continuation) return { nextTurn: 0, pending: [] };
  if (continuation.harness !== name || continuation.version !== CONTINUATION_VERSION) {
    throw new AssemblyLineError("AL_ERR_CONTINUATION_VERSION", `continuation from ${continuation.harness} v${continuation.version} cannot resume on ${name} v${CONTINUATION_VERSION}`, {
      fix: "Resume the run with the engine that paused it.",
    });
  }
  return structuredClone(continuation.data) as unknown as ScriptedState;
}
