import { createHash, randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Daytona, Sandbox as DaytonaSdkSandbox } from "@daytonaio/sdk";
import { AssemblyLineError, KILL_LEFTOVERS, checkReadSize, sizeScript, tracked, type Sandbox, type SandboxDriver, type SandboxSnapshot, type SnapshottingSandboxAdapter, ShellSandbox, SandboxOpenings, successiveSandbox } from "@assemblyline-agents/core";
import { resolveDaytonaOptions, type DaytonaSandboxOptions, type ResolvedDaytonaOptions } from "./options.js";
import { providerError, statusOf } from "./provider-error.js";
import { retryRateLimited } from "./rate-limit.js";

/** Labels mark what this adapter made, so it finds its sandboxes again after a restart. */
export const LABELS = {
  sandbox: "dev.assembly-line.sandbox",
  key: "dev.assembly-line.sandbox.key",
  scope: "dev.assembly-line.sandbox.scope",
} as const;

const DEFAULT_API_URL = "https://app.daytona.io/api";
/** States a sandbox leaves by itself: wait for `started`. */
const TRANSIENT = new Set(["creating", "restoring", "starting", "pending_build", "building_snapshot", "pulling_snapshot", "resizing", "snapshotting", "forking"]);
/** States `start` brings back, files intact. */
const RESUMABLE = new Set(["stopped", "stopping", "archived", "archiving", "paused", "pausing"]);
/** States of a sandbox Daytona is deleting or has deleted, files and all. */
const GONE = new Set(["destroyed", "destroying"]);
/** Sandboxes per page of a listing: Daytona's default (it takes up to 200). */
const PAGE_SIZE = 100;
/** Snapshot states a Daytona snapshot does not leave on its way to `active`. */
const SNAPSHOT_FAILED = new Set(["error", "build_failed"]);

export interface DaytonaSandboxAdapterOptions extends DaytonaSandboxOptions {
  /** The agent folder; the default scope is derived from it. */
  agentDir?: string;
  /** Where DAYTONA_API_KEY, DAYTONA_API_URL and DAYTONA_TARGET are read (default process.env). */
  hostEnv?: Record<string, string | undefined>;
}

/**
 * Daytona sandboxes over the official SDK: one sandbox per key (a run), named
 * after the key so a restarted host finds it again, created on first acquire,
 * started again when Daytona stopped it, and deleted on release; listKeys
 * finds the scope's by their labels, so a host releases the ones a crash
 * left. With a snapshot policy, a sandbox is saved as a Daytona snapshot named
 * after the key, and a key with no sandbox starts from its latest one.
 */
export class DaytonaSandboxAdapter implements SnapshottingSandboxAdapter {
  readonly name = "daytona";
  readonly options: ResolvedDaytonaOptions;
  // #private: util.inspect, console.log and JSON.stringify never show them, so the key they hold stays out of logs.
  readonly #hostEnv: Record<string, string | undefined>;
  #client: Daytona | undefined;
  private readonly live = new SandboxOpenings<ShellSandbox>();
  /**
   * Each open sandbox's SDK handle (so a later acquire of its key can check Daytona still has it), its driver
   * (which a handle whose sandbox Daytona no longer has makes its calls through) and what ends it (#private: the handles hold the key).
   */
  readonly #opened = new WeakMap<ShellSandbox, Opened<DaytonaSdkSandbox>>();

  constructor(options: DaytonaSandboxAdapterOptions) {
    const { agentDir, hostEnv, ...rest } = options;
    this.options = resolveDaytonaOptions(rest, agentDir ? `agent-${digest(agentDir).slice(0, 12)}` : "default");
    this.#hostEnv = hostEnv ?? process.env;
  }

  /**
   * The key's sandbox: the live one, a stopped one started again, or a new one. A live one Daytona
   * no longer has (deleted elsewhere, or by its auto-delete) is replaced by a new one.
   */
  async acquire(key: string): Promise<Sandbox> {
    checkKey(key);
    return this.live.acquireLive(key, () => this.open(key), async (sandbox) => {
      const opened = this.#opened.get(sandbox);
      if (!opened || !(await this.isGone(opened.remote))) return true;
      opened.gone();
      return false;
    });
  }

  /**
   * Delete the key's sandbox (an `auto` policy snapshots it first). Releasing an unknown key is a no-op.
   * When the `auto` snapshot fails, the sandbox is stopped (its files kept, its compute no longer
   * billed) and the release fails, so a later sweep's release tries the snapshot again.
   */
  async release(key: string): Promise<void> {
    checkKey(key);
    this.live.endTerm(key);
    // An acquire still creating the sandbox would leave it running after the lookup below.
    await this.live.settle(key);
    const remote = await this.find(key);
    if (!remote) return;
    if (this.options.snapshot?.mode === "auto") {
      try {
        await this.save(key, remote, this.options.snapshot.reason ?? "run ended");
      } catch (error) {
        if (String(remote.state) === "started") await this.call("stopping the sandbox", () => remote.stop(Math.ceil(this.options.createTimeoutMs / 1000))).catch(() => undefined);
        throw error;
      }
    }
    await this.remove(remote);
  }

  /**
   * The keys this scope has sandboxes for at Daytona, in any state Daytona
   * keeps (started, stopped, archived, errored): what a release deletes.
   * Snapshots are not listed, since a release keeps them.
   */
  async listKeys(): Promise<string[]> {
    const { scope } = this.options;
    const client = await this.sdk();
    // The SDK follows nextCursor page by page, each request bounded by requestTimeoutMs; a rate-limited page starts the listing over, which repeats harmlessly.
    const listed = await this.call(
      "listing sandboxes",
      async () => {
        const found: DaytonaSdkSandbox[] = [];
        for await (const remote of client.list({ labels: { [LABELS.sandbox]: "1", [LABELS.scope]: scope }, limit: PAGE_SIZE })) found.push(remote);
        return found;
      },
      this.options.requestTimeoutMs,
    );
    const keys = new Set<string>();
    for (const remote of listed) {
      const key = remote.labels?.[LABELS.key];
      // The API filters by labels; checked again here, as find does, so another scope's key is never listed.
      if (key && remote.labels[LABELS.scope] === scope) keys.add(key);
    }
    return [...keys].sort();
  }

  /** Save the key's sandbox as a Daytona snapshot, then prune beyond retainLast. */
  async snapshot(key: string, options: { reason?: string } = {}): Promise<SandboxSnapshot> {
    checkKey(key);
    const policy = this.requirePolicy();
    const remote = await this.find(key);
    if (!remote) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `sandbox ${key} has no Daytona sandbox to snapshot`, {
        fix: "Acquire the sandbox (run a command in it) before taking a snapshot.",
        details: { key },
      });
    }
    return this.save(key, remote, options.reason ?? policy.reason);
  }

  /** The key's snapshots, newest first. Daytona keeps no note with a snapshot, so only the one snapshot() returns carries its reason. */
  async listSnapshots(key: string): Promise<SandboxSnapshot[]> {
    checkKey(key);
    const prefix = `${this.sandboxName(key)}-`;
    const snapshots: SandboxSnapshot[] = [];
    for (let page = 1, pages = 1; page <= pages; page += 1) {
      const listed = await this.call("listing snapshots", async () => (await this.sdk()).snapshot.list(page, 100), this.options.requestTimeoutMs);
      pages = listed.totalPages;
      for (const item of listed.items) {
        if (!item.name.startsWith(prefix)) continue;
        const id = item.name.slice(prefix.length);
        const created = Number(/^s(\d+)-/.exec(id)?.[1] ?? new Date(item.createdAt).getTime());
        snapshots.push({ id, key, createdAt: new Date(created).toISOString(), reason: undefined });
      }
    }
    // Ids start with a millisecond timestamp and a random tail: newest first, ties broken by id.
    return snapshots.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  }

  /** Replace the key's sandbox with one made from a snapshot (default: the latest). */
  async restore(key: string, snapshotId?: string): Promise<Sandbox> {
    checkKey(key);
    const snapshots = await this.listSnapshots(key);
    const chosen = snapshotId === undefined ? snapshots[0] : snapshots.find((entry) => entry.id === snapshotId);
    if (!chosen) {
      throw new AssemblyLineError("AL_ERR_SNAPSHOT_NOT_FOUND", `sandbox ${key} has no snapshot ${snapshotId === undefined ? "at all" : JSON.stringify(snapshotId)}`, {
        fix: `Restore one of: ${snapshots.map((entry) => entry.id).join(", ") || "(none; take a snapshot first)"}.`,
        details: { key, snapshotId },
      });
    }
    // An acquire still creating the sandbox would leave it running after the lookup below.
    await this.live.settle(key);
    const existing = await this.find(key);
    if (existing) await this.remove(existing);
    return this.live.replace(key, this.create(key, 0, this.snapshotName(key, chosen.id)));
  }

  /** Delete the key's snapshots beyond the newest `retainLast` (default: the policy's). */
  async pruneSnapshots(key: string, retainLast = this.options.snapshot?.retainLast ?? 3): Promise<string[]> {
    const removed: string[] = [];
    for (const old of (await this.listSnapshots(key)).slice(retainLast)) {
      await this.call(`deleting snapshot ${old.id}`, async () => (await this.sdk()).snapshot.delete(this.snapshotName(key, old.id)), this.options.requestTimeoutMs).catch((error: unknown) => {
        if ((error as AssemblyLineError).details?.status !== 404) throw error;
      });
      removed.push(old.id);
    }
    return removed;
  }

  /** Close the SDK client (its event connection). */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await client[Symbol.asyncDispose]();
  }

  /** The sandbox name a key maps to (stable across processes, so a restarted host finds it). */
  sandboxName(key: string): string {
    return `al-${this.options.scope}-${digest(key).slice(0, 24)}`;
  }

  /** The SDK client, made on first use: the SDK (and its dependencies) loads only when a run needs a sandbox. */
  private async sdk(): Promise<Daytona> {
    if (this.#client) return this.#client;
    const apiKey = this.#hostEnv.DAYTONA_API_KEY;
    if (!apiKey) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", "the Daytona sandbox needs DAYTONA_API_KEY, which is not set", {
        fix: "Set DAYTONA_API_KEY (and DAYTONA_API_URL for a self-hosted Daytona) in the host's environment.",
      });
    }
    // An explicit URL keeps the SDK from reading the endpoint out of a .env file in the working folder.
    const apiUrl = this.options.apiUrl ?? this.#hostEnv.DAYTONA_API_URL ?? DEFAULT_API_URL;
    const target = this.options.target ?? this.#hostEnv.DAYTONA_TARGET;
    const { Daytona: Client } = await import("@daytonaio/sdk");
    this.#client ??= new Client({ apiKey, apiUrl, requestTimeoutMs: this.options.requestTimeoutMs, ...(target ? { target } : {}) });
    return this.#client;
  }

  private async open(key: string, attempt = 0): Promise<ShellSandbox> {
    const existing = await this.find(key);
    if (existing) {
      const state = String(existing.state ?? "");
      const timeout = Math.ceil(this.options.createTimeoutMs / 1000);
      if (RESUMABLE.has(state)) await this.call("starting the sandbox again", () => existing.start(timeout));
      else if (TRANSIENT.has(state)) await this.call("waiting for the sandbox to start", () => existing.waitUntilStarted(timeout), this.options.createTimeoutMs);
      else if (state === "destroyed" || state === "destroying") return this.create(key, attempt, undefined);
      else if (state !== "started") {
        throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `Daytona sandbox ${existing.name} of ${key} is in state ${state}`, {
          fix: "Delete or recover it in Daytona; the next run then gets a new one.",
          details: { key, state },
        });
      }
      // Opened by this process for the first time (not just lost a creation race): any command still running was left by the run's earlier owner.
      if (attempt === 0) await this.call("stopping commands left running", () => this.execute(existing, KILL_LEFTOVERS, 60_000));
      const sandbox = this.wrap(key, existing);
      // A create that timed out (here or in another process) may still have finished at Daytona, without its /workspace; making it again is harmless.
      await sandbox.prepare();
      return sandbox;
    }
    const [latest] = this.options.snapshot ? await this.listSnapshots(key) : [];
    return this.create(key, attempt, latest ? this.snapshotName(key, latest.id) : undefined);
  }

  private async create(key: string, attempt: number, fromSnapshot?: string): Promise<ShellSandbox> {
    const { options } = this;
    const resources = { ...(options.cpus ? { cpu: options.cpus } : {}), ...(options.memoryGiB ? { memory: options.memoryGiB } : {}), ...(options.diskGiB ? { disk: options.diskGiB } : {}) };
    const base = {
      name: this.sandboxName(key),
      labels: { [LABELS.sandbox]: "1", [LABELS.key]: key, [LABELS.scope]: options.scope },
      networkBlockAll: options.networkBlockAll,
      ...(options.autoStopMinutes !== undefined ? { autoStopInterval: options.autoStopMinutes } : {}),
    };
    const startFrom = fromSnapshot ?? options.baseSnapshot;
    const params =
      options.image && !fromSnapshot ? { ...base, image: options.image, ...(Object.keys(resources).length ? { resources } : {}) } : { ...base, ...(startFrom ? { snapshot: startFrom } : {}) };
    let remote: DaytonaSdkSandbox;
    try {
      const client = await this.sdk();
      // Named: a repeat after a create that went through is refused as a conflict, handled below.
      remote = await retryRateLimited(() => client.create(params, { timeout: Math.ceil(options.createTimeoutMs / 1000) }), options.createTimeoutMs);
    } catch (error) {
      // Another process created it first: use theirs.
      if (statusOf(error) === 409 && attempt === 0) return this.open(key, attempt + 1);
      throw providerError("Daytona", `creating the sandbox for ${key}`, error, [this.#hostEnv.DAYTONA_API_KEY]);
    }
    const sandbox = this.wrap(key, remote);
    // A sandbox made from a snapshot already has its /workspace.
    if (fromSnapshot) return sandbox;
    await sandbox.prepare().catch(async (error: unknown) => {
      await remote.delete().catch(() => undefined);
      throw error;
    });
    return sandbox;
  }

  /** The Daytona snapshot a key's snapshot id maps to (named after the sandbox, so a restarted host lists it). */
  snapshotName(key: string, id: string): string {
    return `${this.sandboxName(key)}-${id}`;
  }

  private async save(key: string, remote: DaytonaSdkSandbox, reason: string | undefined): Promise<SandboxSnapshot> {
    const now = Date.now();
    const id = `s${now}-${randomBytes(3).toString("hex")}`;
    const name = this.snapshotName(key, id);
    const timeout = Math.ceil(this.options.createTimeoutMs / 1000);
    await this.call(`snapshotting sandbox ${remote.name}`, () => remote.createSnapshot(name, timeout));
    await this.untilActive(name).catch(async (error: unknown) => {
      // Failed, or not active in time: never restored from, and a retry takes a new one, so it goes now instead of piling up unpruned.
      await this.call(`deleting snapshot ${id}`, async () => (await this.sdk()).snapshot.delete(name), this.options.requestTimeoutMs).catch(() => undefined);
      throw error;
    });
    await this.pruneSnapshots(key);
    return { id, key, createdAt: new Date(now).toISOString(), reason };
  }

  /** A new snapshot is usable (as a sandbox's base) only once Daytona reports it active. */
  private async untilActive(name: string): Promise<void> {
    const deadline = Date.now() + this.options.createTimeoutMs;
    for (;;) {
      const found = await this.call(`reading snapshot ${name}`, async () => (await this.sdk()).snapshot.get(name), this.options.requestTimeoutMs);
      const state = String(found.state);
      if (state === "active") return;
      if (SNAPSHOT_FAILED.has(state) || Date.now() > deadline) {
        throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `Daytona snapshot ${name} is ${state}${found.errorReason ? `: ${found.errorReason}` : ""}`, {
          fix: "Check the snapshot in Daytona; raise createTimeoutMs when snapshots take longer to become active.",
          details: { name, state },
        });
      }
      await sleep(1_000);
    }
  }

  private async remove(remote: DaytonaSdkSandbox): Promise<void> {
    await this.call("deleting the sandbox", () => remote.delete(Math.ceil(this.options.createTimeoutMs / 1000)), this.options.createTimeoutMs).catch((error: unknown) => {
      // Already gone (deleted by another process, or by Daytona's auto-delete): nothing to release.
      if ((error as AssemblyLineError).details?.status !== 404) throw error;
    });
  }

  private requirePolicy(): NonNullable<ResolvedDaytonaOptions["snapshot"]> {
    if (!this.options.snapshot) {
      throw new AssemblyLineError("AL_ERR_SNAPSHOT_DISABLED", "this daytona sandbox has no snapshot policy", {
        fix: 'Add snapshot: { mode: "manual", retainLast: 3 } to daytonaSandbox({...}).',
      });
    }
    return this.options.snapshot;
  }

  private wrap(key: string, remote: DaytonaSdkSandbox): ShellSandbox {
    const { sandbox, gone } = successiveSandbox({
      key,
      provider: "Daytona",
      defaults: { timeoutMs: this.options.defaultTimeoutMs, maxOutputBytes: this.options.maxOutputBytes, env: this.options.env },
      openings: this.live,
      acquire: () => this.acquire(key),
      driver: (gone) => this.driver(remote, gone),
    });
    this.#opened.set(sandbox, { remote, gone });
    return sandbox;
  }


  /** Whether Daytona no longer has the sandbox (a refresh finds none, or it is being destroyed). A refresh that fails otherwise says nothing: the sandbox's own calls report it. */
  private async isGone(remote: DaytonaSdkSandbox): Promise<boolean> {
    try {
      await retryRateLimited(() => remote.refreshData(), this.options.requestTimeoutMs);
    } catch (error) {
      return statusOf(error) === 404;
    }
    return GONE.has(String(remote.state ?? ""));
  }

  /**
   * The toolbox calls a sandbox needs: one command, a file download, a file upload. Each is
   * made through `resumed`, so a run's sandbox that Daytona stopped while the run waited
   * (autoStopMinutes without activity) is started again by the next call on the same handle.
   */
  private driver(remote: DaytonaSdkSandbox, gone: () => void): SandboxDriver {
    const resumed = this.resumer(remote, gone);
    return {
      // The script travels as base64, a third longer, in one process argument, which the kernel refuses past 128 KiB.
      maxScriptBytes: 90_000,
      runScript: async (script, limitMs) => resumed("running a command", () => this.execute(remote, tracked(script), limitMs), { repeatable: false }),
      downloadFile: async (path) => {
        // Reading a size changes nothing, and a download or upload of the same bytes repeats harmlessly.
        checkReadSize("Daytona", path, Number((await resumed(`reading the size of ${path}`, () => this.execute(remote, sizeScript(path), 60_000), { repeatable: true })).trim()));
        const bytes = new Uint8Array(await resumed(`reading ${path}`, () => remote.fs.downloadFile(path), { repeatable: true, retryWithinMs: this.options.requestTimeoutMs }));
        // The file may have grown since its size was read.
        checkReadSize("Daytona", path, bytes.length);
        return bytes;
      },
      uploadFile: async (path, content) => resumed(`writing ${path}`, () => remote.fs.uploadFile(Buffer.from(content), path), { repeatable: true, retryWithinMs: this.options.requestTimeoutMs }),
    };
  }

  /**
   * Toolbox calls on one sandbox that start it again when Daytona stopped it. A call that failed
   * while the sandbox is not started (a refresh says so) starts it, files intact, then is made once
   * more when it cannot have run (Daytona refused it for the sandbox's state) or repeats harmlessly
   * (`repeatable`). A command that may have run is never run twice: its failure stands, and the next
   * call finds the sandbox started. Calls failing together share one start.
   */
  private resumer(remote: DaytonaSdkSandbox, gone: () => void): <T>(action: string, operation: () => Promise<T>, options: { repeatable: boolean; retryWithinMs?: number }) => Promise<T> {
    let starting: Promise<boolean> | undefined;
    const startAgain = () => {
      starting ??= this.startStopped(remote, gone).finally(() => (starting = undefined));
      return starting;
    };
    return async (action, operation, { repeatable, retryWithinMs }) => {
      try {
        return await (retryWithinMs === undefined ? operation() : retryRateLimited(operation, retryWithinMs));
      } catch (error) {
        const failure = providerError("Daytona", action, error, [this.#hostEnv.DAYTONA_API_KEY]);
        if (!answeredBySandbox(error) && (await startAgain()) && (repeatable || refusedForState(error))) return this.call(action, operation, retryWithinMs);
        throw failure;
      }
    };
  }

  /**
   * Start the sandbox again when a refresh shows Daytona stopped (or archived) it; true when it was not started and now is.
   * When Daytona no longer has it, `gone` is called: the call's failure stands, and the key's next acquire makes a new sandbox.
   */
  private async startStopped(remote: DaytonaSdkSandbox, gone: () => void): Promise<boolean> {
    try {
      await retryRateLimited(() => remote.refreshData(), this.options.requestTimeoutMs);
    } catch (error) {
      if (statusOf(error) === 404) gone();
      return false;
    }
    const state = String(remote.state ?? "");
    if (GONE.has(state)) gone();
    const timeout = Math.ceil(this.options.createTimeoutMs / 1000);
    if (RESUMABLE.has(state)) await this.call("starting the sandbox again", () => remote.start(timeout));
    else if (TRANSIENT.has(state)) await this.call("waiting for the sandbox to start", () => remote.waitUntilStarted(timeout), this.options.createTimeoutMs);
    else return false;
    return true;
  }

  /** Everything `script` printed, run by `sh` through the toolbox. */
  private async execute(remote: DaytonaSdkSandbox, script: string, limitMs: number): Promise<string> {
    // The toolbox splits the command on spaces and quotes without a shell, so the script travels as base64.
    const command = `sh -c 'eval "$(echo ${Buffer.from(script, "utf8").toString("base64")} | base64 -d)"'`;
    // A command the rate limiter refused never ran: trying it again runs it once.
    const response = await retryRateLimited(() => remote.process.executeCommand(command, undefined, undefined, Math.ceil(limitMs / 1000)), limitMs);
    return response.result ?? "";
  }

  private async find(key: string): Promise<DaytonaSdkSandbox | undefined> {
    const name = this.sandboxName(key);
    let remote: DaytonaSdkSandbox;
    try {
      const client = await this.sdk();
      remote = await retryRateLimited(() => client.get(name), this.options.requestTimeoutMs);
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw providerError("Daytona", `looking up sandbox ${name}`, error, [this.#hostEnv.DAYTONA_API_KEY]);
    }
    // A same-named sandbox this adapter did not make is never used or deleted.
    if (remote.labels?.[LABELS.key] !== key) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `Daytona sandbox ${name} exists but is not the sandbox of ${key}`, {
        fix: "Delete that sandbox, or give this sandbox another scope.",
        details: { key, name },
      });
    }
    return remote;
  }

  /** One SDK call, its failure as an AssemblyLineError; with `retryWithinMs`, a call safe to repeat is tried again when rate-limited (rate-limit.ts). */
  private async call<T>(action: string, operation: () => Promise<T>, retryWithinMs?: number): Promise<T> {
    try {
      return await (retryWithinMs === undefined ? operation() : retryRateLimited(operation, retryWithinMs));
    } catch (error) {
      throw providerError("Daytona", action, error, [this.#hostEnv.DAYTONA_API_KEY]);
    }
  }
}

/** An open sandbox as a later acquire of its key, or a handle its sandbox was lost under, reaches it. */
interface Opened<Remote> {
  remote: Remote;
  /** The provider no longer has the sandbox: the key's next acquire, and the handle's next call, get a new one. */
  gone: () => void;
}

/** The header Daytona's toolbox answers with, naming the sandbox's state, when the sandbox is not running. */
const STATE_HEADER = "x-daytona-sandbox-state";

/** The sandbox's daemon answered (a command's timeout, a missing file), or the rate limiter did: nothing is started. */
function answeredBySandbox(error: unknown): boolean {
  const status = statusOf(error);
  return status === 408 || status === 429 || (error as { source?: unknown } | null)?.source === "DAYTONA_DAEMON";
}

/**
 * Daytona refused the call before it reached the sandbox: its toolbox names a state other than
 * started, or answers 4xx (refused, never handled; 408, a command's timeout, is excluded above).
 */
function refusedForState(error: unknown): boolean {
  const headers = (error as { headers?: { get?: (name: string) => unknown; [name: string]: unknown } } | null)?.headers;
  const state = headers ? (typeof headers.get === "function" ? headers.get(STATE_HEADER) : headers[STATE_HEADER]) : undefined;
  if (typeof state === "string" && state !== "" && state !== "started") return true;
  const status = statusOf(error);
  return status !== undefined && status >= 400 && status < 500;
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function checkKey(key: string): void {
  if (typeof key !== "string" || key === "") {
    throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `sandbox key ${JSON.stringify(key)} is not a non-empty string`, { fix: "Key sandboxes by the run id." });
  }
}
