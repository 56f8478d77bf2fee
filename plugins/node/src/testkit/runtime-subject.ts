import type { RuntimeKitSubject } from "@assemblyline-agents/core/testkit";
import { InMemoryStateAdapter, buildAgent, loadRuntimeBundle } from "@assemblyline-agents/runtime";
import { noopLogger } from "@assemblyline-agents/core";
import { listenNodeRuntime } from "../host/server.js";

/**
 * The runtime kit's subject for the Node host: build the agent folder as
 * `assembly-line build` does and serve it as `assembly-line start` does, with
 * in-memory state and the kit's engine. A kit factory (one subject per test):
 * `plugins verify` imports it through the manifest's `conformance` entry.
 */
export function nodeRuntimeKitSubject(): { state: RuntimeKitSubject } {
  const start: RuntimeKitSubject["start"] = async ({ agentDir, harness }) => {
    const { artifactRoot } = await buildAgent(agentDir);
    const handle = await listenNodeRuntime({
      ...(await loadRuntimeBundle(artifactRoot)),
      state: new InMemoryStateAdapter(),
      agentHarness: harness,
      port: 0,
      host: "127.0.0.1",
      devMode: true,
      logger: noopLogger(),
    });
    return { url: handle.url, shutdown: () => handle.shutdown({ timeoutMs: 5_000 }) };
  };
  return { state: { start } };
}
