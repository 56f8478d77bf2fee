import { describe, expect, it } from "vitest";
import { definePlugin, isAssemblyLineError, type AgentHarness, type RunEvent } from "@assemblyline-agents/core";
import { createKernel } from "@assemblyline-agents/runtime";
import { createKernelHooks, withObserverFailureSink } from "../src/hooks.js";

const request = { runId: "r1", modelSpec: "acme:model" };
const event = { type: "run.started", runId: "r1", seq: 1, data: {} } as unknown as RunEvent;
const eventContext = { agentId: "a", agentName: "a", agentRevision: "r" };

type TapKind = "tap" | "tapPromise" | "tapAsync";

/** A plugin whose harness tap, made with `kind`, fails with "boom". */
function failingRouter(kind: TapKind) {
  return definePlugin({
    name: "acme-router",
    version: "1.2.3",
    apply(kernel) {
      const harness = kernel.hooks.harness as unknown as Record<TapKind, (name: string, fn: (...args: unknown[]) => unknown) => void>;
      if (kind === "tap") harness.tap("route", () => { throw new Error("boom"); });
      if (kind === "tapPromise") harness.tapPromise("route", async () => { throw new Error("boom"); });
      if (kind === "tapAsync") harness.tapAsync("route", (_request, callback) => (callback as (error: Error) => void)(new Error("boom")));
    },
  });
}

async function failure(work: Promise<unknown>): Promise<unknown> {
  return work.then(() => undefined, (error: unknown) => error);
}

describe("a kernel hook tap that fails", () => {
  for (const kind of ["tap", "tapPromise", "tapAsync"] as const) {
    it(`(${kind}) is rethrown as AL_ERR_HOOK_TAP naming the hook, the tap and the plugin whose apply(kernel) tapped it`, async () => {
      const kernel = await createKernel({ plugins: [failingRouter(kind)] });
      const error = await failure(kernel.hooks.harness.promise(request));
      expect(isAssemblyLineError(error, "AL_ERR_HOOK_TAP"), String(error)).toBe(true);
      expect((error as Error).message).toContain('hooks.harness tap "route" of plugin acme-router@1.2.3 threw: boom');
      expect((error as { fix?: string }).fix).toContain("plugin acme-router@1.2.3");
      expect((error as Error).cause).toEqual(new Error("boom"));
    });
  }

  it("names only the tap when no plugin's apply(kernel) registered it", async () => {
    const hooks = createKernelHooks();
    hooks.harness.tapPromise("host-route", async () => {
      throw new Error("boom");
    });
    const error = await failure(hooks.harness.promise(request));
    expect((error as Error).message).toContain('hooks.harness tap "host-route" threw: boom');
  });

  it("(tapAsync) passes a callback tap's answer on when it succeeds", async () => {
    const hooks = createKernelHooks();
    const harness = { name: "acme", runTurn: async () => ({}) } as unknown as AgentHarness;
    hooks.harness.tapAsync("route", (_request, callback) => setTimeout(() => callback(null, harness), 1));
    expect(await hooks.harness.promise(request)).toBe(harness);
  });

  it("(tapAsync, an event observer) is reported to the observer-failure sink, and the other observers still get the event", async () => {
    const hooks = createKernelHooks();
    const seen: string[] = [];
    const reported: unknown[] = [];
    hooks.event.tapAsync("callback-observer", (_event, _context, callback) => callback(new Error("observer boom")));
    hooks.event.tapPromise("slow-observer", async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      seen.push("slow");
    });
    const context = withObserverFailureSink(eventContext, (error) => reported.push(error));
    await hooks.event.promise(event, context);
    expect(seen).toEqual(["slow"]);
    expect(reported).toHaveLength(1);
    expect(isAssemblyLineError(reported[0], "AL_ERR_HOOK_TAP")).toBe(true);
    expect((reported[0] as Error).message).toContain('hooks.event tap "callback-observer" threw: observer boom');
  });
});
