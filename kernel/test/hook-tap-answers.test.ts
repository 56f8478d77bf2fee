import { definePlugin, isAssemblyLineError } from "@assemblyline-agents/core";
import { createKernel, scriptedHarness } from "@assemblyline-agents/runtime";
import { describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";
import { startAgent, startBuilt } from "./support/runtime.js";

type TapKind = "tap" | "tapPromise" | "tapAsync";
type AnyHook = Record<TapKind, (name: string, fn: (...args: unknown[]) => unknown) => void>;

/** A plugin whose tap of `hook`, made with `kind`, answers `answer`. */
function answering(hook: "context" | "harness", kind: TapKind, answer: unknown) {
  return definePlugin({
    name: "acme-shaper",
    version: "2.0.1",
    apply(kernel) {
      const tapped = kernel.hooks[hook] as unknown as AnyHook;
      if (kind === "tap") tapped.tap("shape", () => answer);
      if (kind === "tapPromise") tapped.tapPromise("shape", async () => answer);
      if (kind === "tapAsync") tapped.tapAsync("shape", (...args) => (args.at(-1) as (error: null, answer: unknown) => void)(null, answer));
    },
  });
}

describe("a plugin's context tap whose answer is no model context", () => {
  for (const kind of ["tap", "tapPromise", "tapAsync"] as const) {
    it(`(${kind}) fails the run with AL_ERR_HOOK_TAP naming the hook, the tap, its plugin and the missing fields`, async () => {
      const kernel = await createKernel({ plugins: [answering("context", kind, { instructions: "Be brief." })] });
      const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "never" }], { kernel });
      const result = await runtime.run({ message: "hi" });
      expect(result.status).toBe("failed");
      expect(result.error?.code).toBe("AL_ERR_HOOK_TAP");
      expect(result.error?.message).toContain('hooks.context tap "shape" of plugin acme-shaper@2.0.1 returned a model context without messages (an array), tools (an array)');
      // No model call was made with it.
      expect(log.contexts).toEqual([]);
    });
  }

  it("names an async function tapped with tap(): its promise is no context", async () => {
    const kernel = await createKernel({ plugins: [answering("context", "tap", Promise.resolve({ instructions: "", messages: [], tools: [] }))] });
    const { runtime } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "never" }], { kernel });
    const result = await runtime.run({ message: "hi" });
    expect(result.error?.message).toContain('hooks.context tap "shape" of plugin acme-shaper@2.0.1 returned a promise (tap() does not wait for one: tap with tapPromise)');
  });

  it("leaves a run whose context tap reshapes the context, or answers undefined, to go on", async () => {
    const reshaping = definePlugin({
      name: "acme-shaper",
      version: "2.0.1",
      apply(kernel) {
        kernel.hooks.context.tapPromise("shape", async (context) => ({ ...context, instructions: `${context.instructions}\nBe brief.` }));
        kernel.hooks.context.tap("look", () => undefined);
      },
    });
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "ok" }], { kernel: await createKernel({ plugins: [reshaping] }) });
    expect((await runtime.run({ message: "hi" })).status).toBe("completed");
    expect(log.contexts[0]?.instructions).toMatch(/Be brief\.$/);
  });
});

describe("a plugin's harness tap whose answer is no engine", () => {
  for (const [label, answer, problem] of [
    ["an object without runTurn", { name: "half" }, "an engine without a runTurn function"],
    ["null", null, "null"],
    ["a string", "acme", "a string"],
  ] as const) {
    it(`(${label}) fails the run with AL_ERR_HOOK_TAP naming the hook, the tap and its plugin`, async () => {
      const kernel = await createKernel({ plugins: [answering("harness", "tapPromise", answer)] });
      const { runtime } = await startBuilt(agentFolder({ "agent.ts": MINIMAL_AGENT }), { kernel, defaultHarness: scriptedHarness({ turns: [{ text: "never" }] }) });
      const result = await runtime.run({ message: "hi" });
      expect(result.status).toBe("failed");
      expect(result.error?.code).toBe("AL_ERR_HOOK_TAP");
      expect(result.error?.message).toContain(`hooks.harness tap "shape" of plugin acme-shaper@2.0.1 returned ${problem}`);
    });
  }

  it("(tapAsync) is refused with the plugin named, at the hook itself", async () => {
    const kernel = await createKernel({ plugins: [answering("harness", "tapAsync", { name: "half" })] });
    const error = await kernel.hooks.harness.promise({ runId: "r1", modelSpec: "acme:model" }).then(() => undefined, (caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_HOOK_TAP"), String(error)).toBe(true);
    expect((error as { fix?: string }).fix).toContain("Return an engine");
    expect((error as { fix?: string }).fix).toContain("plugin acme-shaper@2.0.1");
  });
});
