import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { LocalBlobStore, LocalSandboxAdapter, LocalScheduler } from "../src/index.js";

/** Built directly (not through a gateway slot, whose options the schema checks), a typo would leave the default in place unseen. */
describe("the local classes' options", () => {
  it("refuse a key they do not know, naming it", () => {
    expect(() => new LocalSandboxAdapter({ defaultTimeout: 5_000 } as never)).toThrow(/AL_ERR_SANDBOX_DEFINITION: LocalSandboxAdapter option "defaultTimeout" unknown/);
    expect(() => new LocalBlobStore({ dir: "/tmp/blobs" } as never)).toThrow(/AL_ERR_BLOB_CONFIG: LocalBlobStore option "dir" unknown/);
    expect(() => new LocalScheduler({ store: new InMemoryStateAdapter(), pollInterval: 10 } as never)).toThrow(/AL_ERR_STATE_INPUT_INVALID: LocalScheduler option "pollInterval" unknown/);
  });

  it("refuse values of the wrong kind", () => {
    expect(() => new LocalBlobStore({ directory: 5 } as never)).toThrow(/LocalBlobStore option directory is 5; it must be a folder path/);
    expect(() => new LocalScheduler({ store: new InMemoryStateAdapter(), batchSize: 2.5 })).toThrow(/LocalScheduler option batchSize is 2.5, not a positive whole number/);
  });

  it("take the options they document", () => {
    expect(() => new LocalSandboxAdapter({ root: "/tmp/al-sandboxes", defaultTimeoutMs: 1_000, maxOutputBytes: 10, env: {} })).not.toThrow();
    expect(() => new LocalBlobStore({ directory: "/tmp/al-blobs" })).not.toThrow();
    expect(() => new LocalScheduler({ store: new InMemoryStateAdapter(), pollIntervalMs: 10, leaseMs: 1_000, batchSize: 3, owner: "me" })).not.toThrow();
  });
});
