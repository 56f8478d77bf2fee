import { createHash, randomBytes } from "node:crypto";
import type { Sandbox as E2bSdkSandbox, SandboxInfo } from "e2b";
import { AssemblyLineError, KILL_LEFTOVERS, checkReadSize, sizeScript, tracked, type Sandbox, type SandboxDriver, type SandboxSnapshot, type SnapshottingSandboxAdapter, ShellSandbox, SandboxOpenings, successiveSandbox } from "@assemblyline-agents/core";
import { resolveE2bOptions, type E2bSandboxOptions, type ResolvedE2bOptions } from "./options.js";
import { providerError, statusOf } from "./provider-error.js";

/** Metadata marks what this adapter made, so it finds its sandboxes again after a restart. */
export const METADATA = {
  sandbox: "dev.assembly-line.sandbox",
  key: "dev.assembly-line.sandbox.key",
  scope: "dev.assembly-line.sandbox.scope",
} as const;

export interface E2bSandboxAdapterOptions extends E2bSandboxOptions {
  /** The agent folder; the default scope is derived from it. */
  agentDir?: string;
  /** Where E2B_API_KEY, E2B_DOMAIN, E2B_API_URL and E2B_SANDBOX_URL are read (default process.env). */
  hostEnv?: Record<string, string | undefined>;
}

/** A run's E2B sandbox as its calls reach it: the SDK handle, replaced by a new one when the sandbox is resumed. */
/** How much of a sandbox's lifetime must be left beyond what a call may take, or it is renewed first. */
const RENEWAL_MARGIN_MS = 30_000;
/** What a file call may take, for the lifetime left before it. */
const FILE_CALL_MS = 60_000;

interface Attachment {
  remote: E2bSdkSandbox;
  /** A resume in progress, shared by the calls that failed together. */
  resuming?: Promise<boolean>;
  /** A lifetime renewal in progress, shared by the calls that found it short together. */
  renewing?: Promise<void>;
  /** E2B no longer has the sandbox (killed, or its lifetime ended with onTimeout "kill"): the key's next acquire, and the handle's next call, get a new one. */
  gone: () => void;
}

/** One of a key's E2B snapshots: our id (in its name) and E2B's id (to create from and delete). */
interface StoredSnapshot {
  id: string;
  snapshotId: string;
}

/**
 * E2B sandboxes over the official SDK: one sandbox per key (a run), tagged with
 * the key in its metadata so a restarted host finds it again (E2B resumes a
 * paused one on connect), created on first acquire and killed on release;
 * listKeys finds the scope's by their metadata, so a host releases the ones a
 * crash left. With a snapshot policy, a sandbox is saved as an E2B snapshot
 * named after the key, and a key with no sandbox starts from its latest one.
 */
export class E2bSandboxAdapter implements SnapshottingSandboxAdapter {
  readonly name = "e2b";
  readonly options: ResolvedE2bOptions;
  // #private: util.inspect, console.log and JSON.stringify never show them, so the key they hold stays out of logs.
  readonly #hostEnv: Record<string, string | undefined>;
  private readonly live = new SandboxOpenings<ShellSandbox>();
  /** Each open sandbox's attachment, so a later acquire of its key restarts the lifetime on the handle its calls use (#private: the SDK handles hold the key). */
  readonly #attachments = new WeakMap<ShellSandbox, Attachment>();
  /**
   * When E2B ends each sandbox (by id) at the latest: its timeout is absolute, counted from the
   * create, connect or setTimeout that set it, whatever the sandbox is doing then.
   */
  readonly #endsBy = new Map<string, number>();

  constructor(options: E2bSandboxAdapterOptions) {
    const { agentDir, hostEnv, ...rest } = options;
    this.options = resolveE2bOptions(rest, agentDir ? `agent-${createHash("sha256").update(agentDir).digest("hex").slice(0, 12)}` : "default");
    this.#hostEnv = hostEnv ?? process.env;
  }

  /**
   * The key's sandbox: the live one, a running or paused one found by its metadata, or a new one.
   * Acquiring a live one connects to it again, restarting its lifetime (and resuming it when E2B
   * paused it at the end of the last one).
   */
  async acquire(key: string): Promise<Sandbox> {
    checkKey(key);
    return this.live.acquireLive(key, () => this.open(key), async (sandbox) => {
      const attachment = this.#attachments.get(sandbox);
      if (!attachment) return true;
      try {
        attachment.remote = await this.reconnect(attachment.remote.sandboxId);
        return true;
      } catch (error) {
        // E2B no longer has it (killed, or its lifetime ended with onTimeout "kill"), its files with it: the key gets a new one instead of this failure at every acquire.
        if ((error as AssemblyLineError).details?.status !== 404) throw error;
        attachment.gone();
        return false;
      }
    });
  }

  /**
   * Kill the key's sandbox (an `auto` policy snapshots it first). Releasing an unknown key is a no-op.
   * When the `auto` snapshot fails, the sandbox is paused (its files kept, its compute no longer
   * billed) and the release fails, so a later sweep's release tries the snapshot again.
   */
  async release(key: string): Promise<void> {
    checkKey(key);
    this.live.endTerm(key);
    // An acquire still creating the sandbox would leave it running after the lookup below.
    await this.live.settle(key);
    const found = await this.find(key);
    if (found[0] && this.options.snapshot?.mode === "auto") {
      const [first] = found;
      try {
        await this.save(key, first, this.options.snapshot.reason ?? "run ended");
      } catch (error) {
        await this.call("pausing the sandbox", async () => (await sdk()).pause(first.sandboxId, this.connection())).catch(() => undefined);
        throw error;
      }
    }
    await this.killAll(found);
  }

  /**
   * The keys this scope has sandboxes for at E2B, running or paused: what a
   * release kills. Snapshots are not listed, since a release keeps them.
   */
  async listKeys(): Promise<string[]> {
    const { scope } = this.options;
    // limit: E2B's largest page (100); the paginator follows X-Next-Token to the last one.
    const paginator = (await sdk()).list({ ...this.connection(), limit: 100, query: { metadata: { [METADATA.sandbox]: "1", [METADATA.scope]: scope }, state: ["running", "paused"] } });
    const keys = new Set<string>();
    while (paginator.hasNext) {
      for (const info of await this.call("listing sandboxes", () => paginator.nextItems())) {
        const key = info.metadata[METADATA.key];
        // The API filters by metadata; checked again here, as find does, so another scope's key is never listed.
        if (key && info.metadata[METADATA.scope] === scope) keys.add(key);
      }
    }
    return [...keys].sort();
  }

  /** Save the key's sandbox as an E2B snapshot, then prune beyond retainLast. */
  async snapshot(key: string, options: { reason?: string } = {}): Promise<SandboxSnapshot> {
    checkKey(key);
    const policy = this.requirePolicy();
    const [found] = await this.find(key);
    if (!found) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `sandbox ${key} has no E2B sandbox to snapshot`, {
        fix: "Acquire the sandbox (run a command in it) before taking a snapshot.",
        details: { key },
      });
    }
    return this.save(key, found, options.reason ?? policy.reason);
  }

  /** The key's snapshots, newest first. E2B keeps no note with a snapshot, so only the one snapshot() returns carries its reason. */
  async listSnapshots(key: string): Promise<SandboxSnapshot[]> {
    checkKey(key);
    return (await this.stored(key)).map(({ id }) => ({ id, key, createdAt: new Date(Number(/^s(\d+)-/.exec(id)![1])).toISOString(), reason: undefined }));
  }

  /** Replace the key's sandbox with one made from a snapshot (default: the latest). */
  async restore(key: string, snapshotId?: string): Promise<Sandbox> {
    checkKey(key);
    const stored = await this.stored(key);
    const chosen = snapshotId === undefined ? stored[0] : stored.find((entry) => entry.id === snapshotId);
    if (!chosen) {
      throw new AssemblyLineError("AL_ERR_SNAPSHOT_NOT_FOUND", `sandbox ${key} has no snapshot ${snapshotId === undefined ? "at all" : JSON.stringify(snapshotId)}`, {
        fix: `Restore one of: ${stored.map((entry) => entry.id).join(", ") || "(none; take a snapshot first)"}.`,
        details: { key, snapshotId },
      });
    }
    // An acquire still creating the sandbox would leave it running after the lookup below.
    await this.live.settle(key);
    await this.killAll(await this.find(key));
    return this.live.replace(key, this.create(key, chosen.snapshotId));
  }

  /** Delete the key's snapshots beyond the newest `retainLast` (default: the policy's). */
  async pruneSnapshots(key: string, retainLast = this.options.snapshot?.retainLast ?? 3): Promise<string[]> {
    const removed: string[] = [];
    for (const old of (await this.stored(key)).slice(retainLast)) {
      // false: already deleted elsewhere, which is what pruning wants.
      await this.call(`deleting snapshot ${old.id}`, async () => (await sdk()).deleteSnapshot(old.snapshotId, this.connection()));
      removed.push(old.id);
    }
    return removed;
  }

  /** The E2B snapshot name a key's snapshots start with: lowercase hex, which any team's names accept. */
  snapshotPrefix(key: string): string {
    return `al-${createHash("sha256").update(`${this.options.scope}\0${key}`).digest("hex").slice(0, 24)}-`;
  }

  private async save(key: string, found: SandboxInfo, reason: string | undefined): Promise<SandboxSnapshot> {
    // E2B snapshots a running sandbox only: a paused one is resumed first.
    if (found.state === "paused") await this.call("resuming the sandbox", async () => (await sdk()).connect(found.sandboxId, { ...this.connection(), timeoutMs: this.options.lifetimeMs }));
    const now = Date.now();
    const id = `s${now}-${randomBytes(3).toString("hex")}`;
    await this.call(`snapshotting sandbox ${found.sandboxId}`, async () => (await sdk()).createSnapshot(found.sandboxId, { ...this.connection(), name: `${this.snapshotPrefix(key)}${id}` }));
    await this.pruneSnapshots(key);
    return { id, key, createdAt: new Date(now).toISOString(), reason };
  }

  /** The key's snapshots as E2B lists them, newest first (names come back as "<team>/<name>:<tag>"). */
  private async stored(key: string): Promise<StoredSnapshot[]> {
    const prefix = this.snapshotPrefix(key);
    const paginator = (await sdk()).listSnapshots({ ...this.connection(), limit: 100 });
    const stored: StoredSnapshot[] = [];
    while (paginator.hasNext) {
      for (const info of await this.call("listing snapshots", () => paginator.nextItems())) {
        const name = info.names.map((full) => full.slice(full.lastIndexOf("/") + 1).split(":")[0]!).find((short) => short.startsWith(prefix));
        const id = name?.slice(prefix.length);
        if (id && /^s\d+-[0-9a-f]+$/.test(id)) stored.push({ id, snapshotId: info.snapshotId });
      }
    }
    // Ids start with a millisecond timestamp and a random tail: newest first, ties broken by id.
    return stored.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  }

  private async killAll(found: SandboxInfo[]): Promise<void> {
    for (const entry of found) {
      // false: already gone (killed elsewhere, or E2B's lifetime ended), which is what release wants.
      await this.call("killing the sandbox", async () => (await sdk()).kill(entry.sandboxId, this.connection()));
      // Ended: nothing renews it any more, and a process serving many runs must not keep an entry per sandbox it ever had.
      this.#endsBy.delete(entry.sandboxId);
    }
  }

  private requirePolicy(): NonNullable<ResolvedE2bOptions["snapshot"]> {
    if (!this.options.snapshot) {
      throw new AssemblyLineError("AL_ERR_SNAPSHOT_DISABLED", "this e2b sandbox has no snapshot policy", {
        fix: 'Add snapshot: { mode: "manual", retainLast: 3 } to e2bSandbox({...}).',
      });
    }
    return this.options.snapshot;
  }

  private connection(): { apiKey: string; apiUrl?: string; domain?: string; sandboxUrl?: string } {
    const apiKey = this.#hostEnv.E2B_API_KEY;
    if (!apiKey) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", "the E2B sandbox needs E2B_API_KEY, which is not set", {
        fix: "Set E2B_API_KEY (and E2B_DOMAIN or E2B_API_URL for a self-hosted E2B) in the host's environment.",
      });
    }
    const apiUrl = this.options.apiUrl ?? this.#hostEnv.E2B_API_URL;
    const domain = this.options.domain ?? this.#hostEnv.E2B_DOMAIN;
    const sandboxUrl = this.options.sandboxUrl ?? this.#hostEnv.E2B_SANDBOX_URL;
    // Passed explicitly, so the SDK's own reading of process.env never overrides the host's choice.
    return { apiKey, ...(apiUrl ? { apiUrl } : {}), ...(domain ? { domain } : {}), ...(sandboxUrl ? { sandboxUrl } : {}) };
  }

  private async open(key: string): Promise<ShellSandbox> {
    const [existing] = await this.find(key);
    if (existing) {
      const remote = await this.reconnect(existing.sandboxId);
      // Opened by this process for the first time: any command still running was left by the run's earlier owner.
      await this.call("stopping commands left running", () => remote.commands.run(KILL_LEFTOVERS, { timeoutMs: 60_000 }));
      const sandbox = this.wrap(key, remote);
      // A create that went through at E2B while its host crashed or gave up waiting left a sandbox without /workspace; making it again is harmless.
      await sandbox.prepare();
      return sandbox;
    }
    const [latest] = this.options.snapshot ? await this.stored(key) : [];
    return this.create(key, latest?.snapshotId);
  }

  /** A new sandbox for the key, from the template or (a snapshot's E2B id) a snapshot. */
  private async create(key: string, fromSnapshot?: string): Promise<ShellSandbox> {
    const { options } = this;
    const params = {
      ...this.connection(),
      metadata: { [METADATA.sandbox]: "1", [METADATA.key]: key, [METADATA.scope]: options.scope },
      timeoutMs: options.lifetimeMs,
      allowInternetAccess: options.allowInternetAccess,
      lifecycle: { onTimeout: options.onTimeout },
    };
    const template = fromSnapshot ?? options.template;
    const Client = await sdk();
    const since = Date.now();
    const remote = await this.call(`creating the sandbox for ${key}`, () => (template ? Client.create(template, params) : Client.create(params)));
    this.#endsBy.set(remote.sandboxId, since + options.lifetimeMs);
    const sandbox = this.wrap(key, remote);
    // A sandbox made from a snapshot already has its /workspace.
    if (fromSnapshot) return sandbox;
    await sandbox.prepare().catch(async (error: unknown) => {
      await remote.kill().catch(() => undefined);
      throw error;
    });
    return sandbox;
  }

  private wrap(key: string, remote: E2bSdkSandbox): ShellSandbox {
    let attachment: Attachment | undefined;
    const { sandbox } = successiveSandbox({
      key,
      provider: "E2B",
      defaults: { timeoutMs: this.options.defaultTimeoutMs, maxOutputBytes: this.options.maxOutputBytes, env: this.options.env },
      openings: this.live,
      acquire: () => this.acquire(key),
      driver: (gone) =>
        this.driver(
          (attachment = {
            remote,
            gone: () => {
              // Ended by E2B: nothing renews it any more, and its entry must not stay for the life of the process (as in killAll).
              this.#endsBy.delete(attachment!.remote.sandboxId);
              gone();
            },
          }),
        ),
    });
    this.#attachments.set(sandbox, attachment!);
    return sandbox;
  }


  /** Connect to the sandbox: E2B resumes a paused one (files kept) and restarts its lifetime. A new SDK handle. */
  private async reconnect(sandboxId: string): Promise<E2bSdkSandbox> {
    const since = Date.now();
    const remote = await this.call("connecting to the sandbox", async () => (await sdk()).connect(sandboxId, { ...this.connection(), timeoutMs: this.options.lifetimeMs }));
    this.#endsBy.set(sandboxId, since + this.options.lifetimeMs);
    return remote;
  }

  /**
   * Renew the sandbox's lifetime (lifetimeMs from now) when less of it is left than a call may
   * take (`neededMs`) and a margin: E2B pauses or kills a sandbox at the end of its lifetime even
   * mid-command, and a drive acquires its sandbox once, however long it works. A renewal that
   * fails is left to the call itself to report (a paused sandbox is resumed by `resumed`).
   */
  private async keepAlive(attachment: Attachment, neededMs: number): Promise<void> {
    const { sandboxId } = attachment.remote;
    const endsBy = this.#endsBy.get(sandboxId) ?? 0;
    if (endsBy - Date.now() >= neededMs + RENEWAL_MARGIN_MS) return;
    attachment.renewing ??= (async () => {
      const since = Date.now();
      await attachment.remote.setTimeout(this.options.lifetimeMs);
      this.#endsBy.set(sandboxId, since + this.options.lifetimeMs);
    })()
      .catch(() => undefined)
      .finally(() => (attachment.renewing = undefined));
    await attachment.renewing;
  }

  /**
   * The envd calls a sandbox needs: one process, a file read, a file write. Each is made through
   * `resumed`, so a run's sandbox that E2B paused while the run waited (its lifetime ended) is
   * resumed by the next call on the same handle.
   */
  private driver(attachment: Attachment): SandboxDriver {
    const resumed = <T>(action: string, operation: (remote: E2bSdkSandbox) => Promise<T>, repeatable: boolean) => this.resumed(attachment, action, operation, repeatable);
    return {
      // envd runs the script as one process argument, which the kernel refuses past 128 KiB.
      maxScriptBytes: 100_000,
      runScript: async (script, limitMs) => {
        await this.keepAlive(attachment, limitMs);
        return (await resumed("running a command", (remote) => remote.commands.run(tracked(script), { timeoutMs: limitMs }), false)).stdout;
      },
      downloadFile: async (path) => {
        await this.keepAlive(attachment, FILE_CALL_MS);
        // Reading a size changes nothing, and a read or a write of the same bytes repeats harmlessly.
        const size = await resumed(`reading the size of ${path}`, (remote) => remote.commands.run(sizeScript(path), { timeoutMs: 60_000 }), true);
        checkReadSize("E2B", path, Number(size.stdout.trim()));
        const bytes = await resumed(`reading ${path}`, (remote) => remote.files.read(path, { format: "bytes" }), true);
        // The file may have grown since its size was read.
        checkReadSize("E2B", path, bytes.length);
        return bytes;
      },
      uploadFile: async (path, content) => {
        // A copy whose buffer is exactly the bytes: the SDK sends the whole underlying ArrayBuffer.
        const bytes = content.slice();
        await this.keepAlive(attachment, FILE_CALL_MS);
        await resumed(`writing ${path}`, (remote) => remote.files.write(path, bytes.buffer as ArrayBuffer), true);
      },
    };
  }

  /**
   * One envd call on a sandbox E2B may have paused since it was opened. A call that failed while
   * the sandbox is not running (E2B's API says so) resumes it, files intact, and is made once more
   * on the new handle when it cannot have run (E2B's proxy refused it before the process started:
   * the SDK's SandboxNotFoundError) or repeats harmlessly (`repeatable`). A command that may have
   * run is never run twice: its failure stands, and the next call finds the sandbox running.
   */
  private async resumed<T>(attachment: Attachment, action: string, operation: (remote: E2bSdkSandbox) => Promise<T>, repeatable: boolean): Promise<T> {
    const { remote } = attachment;
    try {
      return await operation(remote);
    } catch (error) {
      const failure = providerError("E2B", action, error, [this.#hostEnv.E2B_API_KEY]);
      if ((await this.resume(attachment, remote)) && (repeatable || neverStarted(error))) return this.call(action, () => operation(attachment.remote));
      throw failure;
    }
  }

  /** Resume the sandbox when E2B paused it; true when a call on `failed` (the handle it used) may be made again on the attachment's handle. */
  private async resume(attachment: Attachment, failed: E2bSdkSandbox): Promise<boolean> {
    // Another call resumed it since this one was made.
    if (attachment.remote !== failed) return true;
    attachment.resuming ??= (async () => {
      try {
        const info = await (await sdk()).getInfo(failed.sandboxId, this.connection());
        if (info.state !== "paused") return false;
      } catch (error) {
        // Gone (killed, its lifetime ended with onTimeout "kill"): the call's own failure stands, and the key's next acquire makes a new sandbox.
        if (statusOf(error) === 404) attachment.gone();
        // Unreadable (the API failing): the call's own failure stands.
        return false;
      }
      attachment.remote = await this.reconnect(failed.sandboxId);
      return true;
    })().finally(() => (attachment.resuming = undefined));
    return attachment.resuming;
  }

  /** The key's sandboxes E2B still has (running or paused), oldest first. */
  private async find(key: string): Promise<SandboxInfo[]> {
    const paginator = (await sdk()).list({ ...this.connection(), query: { metadata: { [METADATA.key]: key, [METADATA.scope]: this.options.scope }, state: ["running", "paused"] } });
    const found: SandboxInfo[] = [];
    while (paginator.hasNext) found.push(...(await this.call(`looking up the sandbox of ${key}`, () => paginator.nextItems())));
    // The API filters by metadata; checked again here so another key's sandbox is never used or killed.
    return found.filter((info) => info.metadata[METADATA.key] === key && info.metadata[METADATA.scope] === this.options.scope).sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
  }

  private async call<T>(action: string, operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw providerError("E2B", action, error, [this.#hostEnv.E2B_API_KEY]);
    }
  }
}

/** E2B's proxy refused the command before its process started (the SDK raises this only before the start event). */
function neverStarted(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === "SandboxNotFoundError";
}

/** The SDK, loaded on first use: it (and its dependencies) loads only when a run needs a sandbox. */
async function sdk(): Promise<typeof E2bSdkSandbox> {
  return (await import("e2b")).Sandbox;
}

function checkKey(key: string): void {
  if (typeof key !== "string" || key === "") {
    throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `sandbox key ${JSON.stringify(key)} is not a non-empty string`, { fix: "Key sandboxes by the run id." });
  }
}
