import { afterEach, describe, expect, it } from "vitest";
import type { OpenEveRuntime } from "@assemblyline-agents/runtime";
import type { RunJournal } from "../src/run/journal.js";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

/** The runtime's journal: what this process keeps per run between its appends. */
const journalOf = (runtime: OpenEveRuntime) => (runtime as unknown as { journal: RunJournal }).journal;

/** Runtimes this file started: each test closes its own, also when an assertion fails. */
const started: OpenEveRuntime[] = [];
afterEach(async () => {
  for (const runtime of started.splice(0)) await runtime.close?.();
});

const start = async (...args: Parameters<typeof startAgent>) => {
  const agentRuntime = await startAgent(...args);
  started.push(agentRuntime.runtime);
  return agentRuntime;
};

const agent = () =>
  agentFolder({
    "agent.ts": MINIMAL_AGENT,
    "tools/echo.ts": toolSource({ upFront: true }),
    "tools/publish.ts": toolSource({ upFront: true, extra: `needsApproval: approvalRequired("Publishing is externally visible."),` }),
  });

describe("the journal keeps nothing of a run once it rests", () => {
  it("after runs that complete, pause on an approval, fail, and resume, with synchronous observers", async () => {
    const { runtime } = await start(agent(), [{ toolCalls: [{ name: "echo", input: { value: "a" } }] }, { text: "done" }]);
    expect((await runtime.run({ message: "go" })).status).toBe("completed");
    expect(journalOf(runtime).runsKnown).toBe(0);

    const paused = await start(agent(), [{ toolCalls: [{ name: "publish", input: { value: "a" } }] }, { text: "published" }]);
    const waiting = await paused.runtime.run({ message: "publish" });
    expect(waiting.status).toBe("waiting_approval");
    expect(journalOf(paused.runtime).runsKnown).toBe(0);
    expect((await paused.runtime.approve(waiting.runId)).status).toBe("completed");
    expect(journalOf(paused.runtime).runsKnown).toBe(0);

    // The probe's script has no second response: the run fails on its second model call.
    const failing = await start(agent(), [{ toolCalls: [{ name: "echo", input: { value: "a" } }] }]);
    expect((await failing.runtime.run({ message: "go" })).status).toBe("failed");
    expect(journalOf(failing.runtime).runsKnown).toBe(0);
  });

  it("after runs whose observer is asynchronous (every event through the full delivery), and runs submitted before they start", async () => {
    const { runtime, observed } = await start(agent(), [{ toolCalls: [{ name: "echo", input: { value: "a" } }] }, { text: "done" }]);
    const seen: string[] = [];
    runtime.hooks.event.tapPromise("slow-observer", async (event) => {
      await new Promise((resolve) => setImmediate(resolve));
      seen.push(event.type);
    });
    const results = await Promise.all([runtime.run({ message: "one" }), runtime.run({ message: "two" })]);
    expect(results.map((result) => result.status)).toEqual(["completed", "completed"]);
    const submitted = await runtime.submit({ message: "three" });
    expect((await runtime.start(submitted.runId)).status).toBe("completed");
    expect(seen.filter((type) => type === "run.completed")).toHaveLength(3);
    expect(observed.filter((event) => event.type === "run.completed")).toHaveLength(3);
    expect(journalOf(runtime).runsKnown).toBe(0);
  });
});
