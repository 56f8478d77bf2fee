import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, type RuntimeOptions } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";

const bundle = async () => loadRuntimeBundle((await buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }))).artifactRoot);
const runtimeOn = async (state: unknown) => {
  const built = await bundle();
  return () => new OpenEveRuntime({ ...built, state, logger: noopLogger() } as RuntimeOptions);
};

describe("a StateStores object's optional facets", () => {
  it("are refused at the constructor when one lacks its facet's methods, naming the facet and what it lacks", async () => {
    const store = new InMemoryStateAdapter();
    // A run in a conversation would otherwise fail later with "store.listConversationMessages is not a function".
    const make = await runtimeOn({ runs: store, conversations: { appendConversationMessages: async () => undefined } });
    expect(make).toThrow(expect.objectContaining({ code: "AL_ERR_STATE_CONFIG", message: expect.stringContaining("state.conversations lacks listConversationMessages") }));
  });

  it("are refused when misspelt, instead of the facet falling back to memory", async () => {
    const store = new InMemoryStateAdapter();
    const make = await runtimeOn({ runs: store, conversation: store });
    expect(make).toThrow(expect.objectContaining({ code: "AL_ERR_STATE_CONFIG", message: expect.stringContaining('no facet named "conversation"') }));
  });

  it("are taken when each implements its facet", async () => {
    const store = new InMemoryStateAdapter();
    const make = await runtimeOn({ runs: store, conversations: store, memory: store, close: async () => undefined });
    expect(make).not.toThrow();
  });
});
