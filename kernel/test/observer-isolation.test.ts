import { afterEach, describe, expect, it } from "vitest";
import { buildAgent, InMemoryStateAdapter, loadRuntimeBundle, noopLogger, OpenEveRuntime, scriptedHarness } from "@assemblyline-agents/runtime";
import type { RuntimeLogger } from "@assemblyline-agents/core";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

const SEEN = "__alObserverIsolationSeen";

/** An agent whose hooks/ file notes each event's seq, taking a moment over tool.called so a run that does not wait for it shows. */
const hookSource = `import { defineHook } from "@assemblyline-agents/core";
export default defineHook({ events: { async "*"(event) {
  if (event.type === "tool.called") await new Promise((resolve) => setTimeout(resolve, 50));
  (globalThis.${SEEN} ??= []).push(event.seq);
} } });
`;

async function runtimeWithFailingObserver(tap: "sync" | "promise" | "async") {
  const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource({ upFront: true }), "hooks/log.ts": hookSource });
  const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
  const errors: string[] = [];
  const logger: RuntimeLogger = { ...noopLogger(), error: (fields: Record<string, unknown>, message?: string) => void errors.push(`${message} seq ${String(fields.seq)}: ${String(fields.err)}`) };
  const harness = scriptedHarness({ turns: [{ toolCalls: [{ name: "echo", input: { value: "x" } }] }, { text: "done" }] });
  const runtime = new OpenEveRuntime({ ...bundle, state: new InMemoryStateAdapter(), agentHarness: harness, logger });
  const fail = (type: string) => {
    if (type === "tool.called") throw new Error("metrics backend down");
  };
  if (tap === "sync") runtime.hooks.event.tap("acme-metrics", (event) => fail(event.type));
  else if (tap === "promise") runtime.hooks.event.tapPromise("acme-metrics", async (event) => fail(event.type));
  else {
    runtime.hooks.event.tapAsync("acme-metrics", (event, _context, callback) => {
      try {
        fail(event.type);
      } catch (error) {
        return callback(error as Error);
      }
      callback();
    });
  }
  return { runtime, errors };
}

afterEach(() => {
  delete (globalThis as Record<string, unknown>)[SEEN];
});

describe("an event observer that fails", () => {
  for (const tap of ["sync", "promise", "async"] as const) {
    it(`(${tap} tap) is reported alone: the agent's hooks/ still get every event, in order, before run() returns`, async () => {
      const { runtime, errors } = await runtimeWithFailingObserver(tap);

      const result = await runtime.run({ message: "go" });
      const seenWhenDone = [...((globalThis as Record<string, unknown>)[SEEN] as number[])];

      expect(result.status).toBe("completed");
      const recorded = (await runtime.listEvents(result.runId)).map((event) => event.seq);
      expect(seenWhenDone).toEqual(recorded);
      const calledSeq = (await runtime.listEvents(result.runId)).find((event) => event.type === "tool.called")!.seq;
      expect(errors).toEqual([expect.stringMatching(new RegExp(`^event observer failed seq ${calledSeq}: .*acme-metrics.*metrics backend down`))]);
    });
  }
});
