import { describe, expect, it } from "vitest";
import type { AgentHarness, HarnessContinuation, HarnessTurnInput, HarnessTurnResult } from "../harness.js";
import type { JsonValue } from "../json.js";
import type { ModelToolSpec } from "../model.js";
import { KitHarnessContext, type KitTool } from "./harness-context.js";
import { useSubject, type StateKitFactory } from "./state/subject.js";

/** One scripted model reply, which the subject's fake provider renders in its own wire protocol. */
export type HarnessKitReply =
  | { text: string }
  | { toolCall: { id: string; name: string; input: Record<string, JsonValue> } }
  /** Accept the request and never answer: the kit aborts the run meanwhile. */
  | { hang: true };

/**
 * An engine wired to a local server that speaks its provider's protocol
 * byte for byte, and a way to script that server.
 */
export interface HarnessKitSubject {
  harness: AgentHarness;
  /** The `provider/model` spec the engine serves against the local server. */
  modelSpec: string;
  /** Queue replies; each model request takes the next one. */
  reply(...replies: HarnessKitReply[]): void;
  /** The JSON bodies of the model requests the server received so far, as text, in order. */
  requests(): string[];
}

const LOOKUP: ModelToolSpec = {
  name: "kit_lookup",
  description: "Look a topic up in the notes.",
  inputSchema: { type: "object", properties: { topic: { type: "string" } }, required: ["topic"], additionalProperties: false },
};
const SHIP: ModelToolSpec = {
  name: "kit_ship",
  description: "Ship a release. Needs a human's approval.",
  inputSchema: { type: "object", properties: { release: { type: "string" } }, required: ["release"], additionalProperties: false },
};

/** Tool outputs carry a marker the kit then looks for in the next model request. */
const TOOLS: Record<string, KitTool> = {
  kit_lookup: { run: (input) => ({ note: `marker-lookup-${(input as { topic: string }).topic}` }) },
  kit_ship: { run: (input) => ({ shipped: `marker-shipped-${(input as { release: string }).release}` }), approval: true },
};

function turnInput(modelSpec: string, continuation?: HarnessContinuation): HarnessTurnInput {
  return {
    runId: "run_kit",
    agentRevision: "rev_kit",
    modelSpec,
    context: {
      instructions: "You are the conformance kit's agent. Use the tools when asked.",
      messages: [{ role: "user", content: "What do my notes say about milk?" }],
      tools: [LOOKUP, SHIP],
    },
    ...(continuation ? { continuation } : {}),
  };
}

async function waitFor(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The AgentHarness contract, against a scripted model: a turn's text streams
 * through textDelta and is the response; a tool call goes through
 * ctx.callTool and the model then sees its output; a paused tool call returns
 * a JSON continuation the engine resumes from (in a fresh context, as another
 * replica would) without running a completed call again; an aborted signal
 * ends the turn; a continuation the engine did not make is refused.
 */
export function describeHarnessConformance(name: string, factory: StateKitFactory<HarnessKitSubject>, options: { timeoutMs?: number } = {}): void {
  const timeout = options.timeoutMs ?? 60_000;
  describe(`${name}: AgentHarness conformance`, () => {
    const subject = useSubject(factory);
    const run = (ctx: KitHarnessContext, continuation?: HarnessContinuation): Promise<HarnessTurnResult> => subject().harness.runTurn(turnInput(subject().modelSpec, continuation), ctx);

    it("streams a scripted text turn through textDelta and returns it as the response", async () => {
      subject().reply({ text: "Your notes say nothing about milk." });
      const ctx = new KitHarnessContext(TOOLS);
      const result = await run(ctx);
      expect(result).toEqual({ status: "completed", response: { text: "Your notes say nothing about milk." } });
      expect(ctx.deltas.join("")).toBe("Your notes say nothing about milk.");
      expect(ctx.toolCalls).toEqual([]);
      expect(subject().requests()).toHaveLength(1);
      expect(subject().requests()[0]).toContain("What do my notes say about milk?");
      expect(subject().requests()[0]).toContain("kit_lookup");
    }, timeout);

    it("sends the model's tool call through ctx.callTool and shows the model its output", async () => {
      subject().reply({ toolCall: { id: "call_kit_1", name: "kit_lookup", input: { topic: "milk" } } }, { text: "Buy milk." });
      const ctx = new KitHarnessContext(TOOLS);
      const result = await run(ctx);
      expect(result).toEqual({ status: "completed", response: { text: "Buy milk." } });
      expect(ctx.toolCalls.map((call) => [call.name, call.input])).toEqual([["kit_lookup", { topic: "milk" }]]);
      expect(subject().requests()).toHaveLength(2);
      expect(subject().requests()[1]).toContain("marker-lookup-milk");
    }, timeout);

    it("pauses on a paused tool call with a JSON continuation, then resumes from it in a fresh context", async () => {
      subject().reply({ toolCall: { id: "call_kit_ship", name: "kit_ship", input: { release: "v2" } } });
      const first = new KitHarnessContext(TOOLS);
      const paused = await run(first);
      expect(paused.status).toBe("paused");
      if (paused.status !== "paused") return;
      const continuation = JSON.parse(JSON.stringify(paused.continuation)) as HarnessContinuation;
      expect(continuation).toEqual(paused.continuation);
      expect(continuation).toMatchObject({ harness: subject().harness.name, agentRevision: "rev_kit" });
      expect(Number.isInteger(continuation.version)).toBe(true);
      expect(first.executed).toEqual([]);

      subject().reply({ text: "Shipped v2." });
      const resumed = first.resume();
      resumed.approved.add("kit_ship");
      const result = await run(resumed, continuation);
      expect(result).toEqual({ status: "completed", response: { text: "Shipped v2." } });
      expect(resumed.executed).toEqual(["kit_ship"]);
      expect(subject().requests().at(-1)).toContain("marker-shipped-v2");
    }, timeout);

    it("ends the turn when the run's signal aborts while the model is answering", async () => {
      subject().reply({ hang: true });
      const controller = new AbortController();
      const ctx = new KitHarnessContext(TOOLS, { signal: controller.signal });
      const turn = run(ctx).then(
        (result) => ({ settled: "resolved" as const, result }),
        (error: unknown) => ({ settled: "rejected" as const, error }),
      );
      const early = await Promise.race([waitFor(() => subject().requests().length === 1, "the model request").then(() => undefined), turn]);
      if (early?.settled === "rejected") throw early.error;
      if (early) throw new Error(`runTurn returned ${JSON.stringify(early.result)} before asking the model`);
      controller.abort(new Error("run cancelled by the kit"));
      const outcome = await Promise.race([turn, new Promise<"still running">((resolve) => setTimeout(() => resolve("still running"), 15_000))]);
      expect(outcome, "runTurn must settle once ctx.signal aborts").not.toBe("still running");
      // A turn may end by throwing the abort reason; it must never claim a completed answer it did not get.
      if (outcome !== "still running" && outcome.settled === "resolved") expect(outcome.result.status).not.toBe("completed");
    }, timeout);

    it("asks the model nothing when the run's signal aborted before the turn", async () => {
      subject().reply({ text: "never asked" });
      const cancelled = new AbortController();
      cancelled.abort(new Error("run cancelled before the turn"));
      const before = await run(new KitHarnessContext(TOOLS, { signal: cancelled.signal })).then(
        (result) => result,
        () => undefined,
      );
      if (before) expect(before.status).not.toBe("completed");
      expect(subject().requests()).toHaveLength(0);
    }, timeout);

    it("asks the model nothing more when the run is cancelled while a resumed turn's open call runs", async () => {
      // Paused on an approval; on the resume the approved call runs, and the run is cancelled while it does.
      subject().reply({ toolCall: { id: "call_kit_ship", name: "kit_ship", input: { release: "v4" } } });
      const first = new KitHarnessContext(TOOLS);
      const paused = await run(first);
      if (paused.status !== "paused") throw new Error(`expected a pause, got ${paused.status}`);
      const asked = subject().requests().length;
      const during = new AbortController();
      const cancelling: Record<string, KitTool> = { ...TOOLS, kit_ship: { ...TOOLS.kit_ship!, run: (input) => (during.abort(new Error("run cancelled during the call")), TOOLS.kit_ship!.run(input)) } };
      const resumed = first.resume({ signal: during.signal, tools: cancelling });
      resumed.approved.add("kit_ship");
      const after = await run(resumed, paused.continuation).then(
        (result) => result,
        () => undefined,
      );
      if (after) expect(after.status).not.toBe("completed");
      expect(subject().requests()).toHaveLength(asked);
    }, timeout);

    it("refuses a continuation another engine or format made, before asking the model", async () => {
      subject().reply({ toolCall: { id: "call_kit_ship", name: "kit_ship", input: { release: "v3" } } });
      const first = new KitHarnessContext(TOOLS);
      const paused = await run(first);
      expect(paused.status).toBe("paused");
      if (paused.status !== "paused") return;
      const own = JSON.parse(JSON.stringify(paused.continuation)) as HarnessContinuation;
      const asked = subject().requests().length;
      // The engine's own data, only the maker or the format changed: the engine must look at both.
      await expect(run(first.resume(), { ...own, harness: `not-${own.harness}` })).rejects.toThrow();
      await expect(run(first.resume(), { ...own, version: own.version + 1_000 })).rejects.toThrow();
      expect(subject().requests()).toHaveLength(asked);
    }, timeout);
  });
}
