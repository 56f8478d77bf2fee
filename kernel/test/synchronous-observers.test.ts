import { describe, expect, it } from "vitest";
import { buildAgent, InMemoryStateAdapter, loadRuntimeBundle, noopLogger, OpenEveRuntime, scriptedHarness } from "@assemblyline-agents/runtime";
import type { RunEvent, RuntimeLogger } from "@assemblyline-agents/core";
import { createKernelHooks, onlySyncTaps } from "../src/hooks.js";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

const script = () => scriptedHarness({ turns: [{ toolCalls: [{ name: "echo", input: { value: "x" } }] }, { text: "done" }] });

/** What the echo tool saw of the observers when it ran: the types the test's tap had been handed by then. */
const SEEN_AT_EXECUTE = "__alSyncObserverSeenAtExecute";
const SEEN_SO_FAR = "__alSyncObserverSeen";

/**
 * A runtime on an agent whose echo tool notes which events the test's observer had
 * seen when it executed; `promised` counts the calls that went through the event
 * hook's promise (the full delivery) once `countPromises` is called, `errors` what
 * the logger was told at error.
 */
async function observedRuntime() {
  const execute = `(globalThis.${SEEN_AT_EXECUTE} ??= []).push([...(globalThis.${SEEN_SO_FAR} ?? [])]); return { echoed: input.value };`;
  const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource({ upFront: true, execute }) });
  const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
  const state = new InMemoryStateAdapter();
  const errors: string[] = [];
  const logger: RuntimeLogger = { ...noopLogger(), error: (fields: Record<string, unknown>, message?: string) => void errors.push(`${message}: ${String(fields.err)}`) };
  const runtime = new OpenEveRuntime({ ...bundle, state, agentHarness: script(), logger });
  let promised = 0;
  /**
   * Count the hook's promise calls from now on. tapable replaces `promise` when it is
   * tapped and again when it compiles, so the replacement is kept behind the counter.
   */
  const countPromises = () => {
    const hook = runtime.hooks.event;
    let inner = hook.promise;
    let compiling = false;
    const counted = (...args: Parameters<typeof hook.promise>) => {
      // The uncompiled `promise` compiles, stores the result and calls it through the property: one call.
      if (compiling) return inner.apply(hook, args);
      promised += 1;
      compiling = true;
      try {
        return inner.apply(hook, args);
      } finally {
        compiling = false;
      }
    };
    Object.defineProperty(hook, "promise", {
      configurable: true,
      get: () => counted,
      set: (value: typeof hook.promise) => {
        inner = value;
      },
    });
  };
  return { runtime, state, errors, countPromises, promised: () => promised };
}

function clearGlobals(): void {
  delete (globalThis as Record<string, unknown>)[SEEN_AT_EXECUTE];
  delete (globalThis as Record<string, unknown>)[SEEN_SO_FAR];
}

describe("observers that are all synchronous taps", () => {
  it("onlySyncTaps: true for `tap`s alone (and for none), false once a tapPromise or a call interceptor is there", () => {
    const hooks = createKernelHooks();
    expect(onlySyncTaps(hooks.event)).toBe(true);
    hooks.event.tap("sync", () => undefined);
    expect(onlySyncTaps(hooks.event)).toBe(true);
    hooks.event.tapPromise("async", async () => undefined);
    expect(onlySyncTaps(hooks.event)).toBe(false);
    const intercepted = createKernelHooks();
    intercepted.event.tap("sync", () => undefined);
    intercepted.event.intercept({ call: () => undefined });
    expect(onlySyncTaps(intercepted.event)).toBe(false);
  });

  it("see every event once, in order, each before the run goes on past it, without a promise per event", async () => {
    clearGlobals();
    const { runtime, state, countPromises, promised } = await observedRuntime();
    const seen: RunEvent[] = [];
    runtime.hooks.event.tap("observer", (event) => {
      seen.push(event);
      ((globalThis as Record<string, unknown>)[SEEN_SO_FAR] as string[] | undefined)?.push(event.type) ??
        ((globalThis as Record<string, unknown>)[SEEN_SO_FAR] = [event.type]);
    });
    countPromises();
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    const stored = await state.listEvents(result.runId);
    expect(seen.map((event) => event.seq)).toEqual(stored.map((event) => event.seq));
    expect(seen.map((event) => event.type)).toEqual(stored.map((event) => event.type));
    // The tool executes after tool.called is durable and observed: the observer saw it first.
    const [atExecute] = (globalThis as Record<string, unknown>)[SEEN_AT_EXECUTE] as string[][];
    expect(atExecute).toContain("tool.called");
    expect(promised()).toBe(0);
    const run = await state.getRun(result.runId);
    expect(run!.observedSeq).toBe(run!.lastSeq);
    await runtime.close?.();
    clearGlobals();
  });

  it("a tap that throws is logged as an observer failure; the run completes and the other events still reach it", async () => {
    const { runtime, state, errors } = await observedRuntime();
    const seen: string[] = [];
    runtime.hooks.event.tap("flaky", (event) => {
      seen.push(event.type);
      if (event.type === "tool.called") throw new Error("observer broke");
    });
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    expect(seen).toEqual((await state.listEvents(result.runId)).map((event) => event.type));
    expect(errors).toEqual([expect.stringContaining("observer broke")]);
    expect(errors[0]).toMatch(/^event observer failed: /);
    await runtime.close?.();
    clearGlobals();
  });

  it("with an async observer beside them, every event goes through the full delivery, still once each and in order", async () => {
    const { runtime, state, countPromises, promised } = await observedRuntime();
    const sync: number[] = [];
    const later: number[] = [];
    runtime.hooks.event.tap("sync", (event) => void sync.push(event.seq));
    runtime.hooks.event.tapPromise("async", async (event) => {
      await new Promise((resolve) => setImmediate(resolve));
      later.push(event.seq);
    });
    countPromises();
    const result = await runtime.run({ message: "go" });
    const seqs = (await state.listEvents(result.runId)).map((event) => event.seq);
    expect(sync).toEqual(seqs);
    expect(later).toEqual(seqs);
    expect(promised()).toBe(seqs.length);
    await runtime.close?.();
    clearGlobals();
  });
});
