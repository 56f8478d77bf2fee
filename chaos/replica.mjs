// One replica of the Node host (listenNodeRuntime) on PostgreSQL state, serving the
// chaos agent with its scripted model. A short lease (2 s) and a fast recovery sweep
// keep the suite short; takeover semantics are the same as with the defaults.
// Prints "READY <url>" once listening; drains on SIGTERM.
import { createPostgresState } from "@assemblyline-agents/postgres";
import { loadRuntimeBundle } from "@assemblyline-agents/runtime";
import { installSignalHandlers, listenNodeRuntime } from "@assemblyline-agents/node";

const [artifactRoot, connectionString, schema, script] = process.argv.slice(2);
const handle = await listenNodeRuntime({
  ...(await loadRuntimeBundle(artifactRoot)),
  state: await createPostgresState({ connectionString, schema }),
  model: `scripted:${script}`,
  port: 0,
  host: "127.0.0.1",
  devMode: true,
  ownerId: `replica-${process.env.CHAOS_WHO}-${process.pid}`,
  leaseTtlMs: 2_000,
  recoveryIntervalMs: 300,
  maxConcurrentRuns: 32,
  maxQueuedRuns: 128,
  shutdownTimeoutMs: 3_000,
});
installSignalHandlers(handle);
process.stdout.write(`READY ${handle.url}\n`);
