import { createHash } from "node:crypto";
import { Daytona, type Sandbox as DaytonaSdkSandbox } from "@daytonaio/sdk";
import { AssemblyLineError, type Sandbox, type SandboxAdapter } from "@assemblyline-agents/core";
import { resolveDaytonaOptions, type DaytonaSandboxOptions, type ResolvedDaytonaOptions } from "./options.js";
import { providerError, statusOf } from "./provider-error.js";
import { ShellSandbox, type SandboxDriver } from "./shell-sandbox.js";

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

export interface DaytonaSandboxAdapterOptions extends DaytonaSandboxOptions {
  /** The agent folder; the default scope is derived from it. */
  agentDir?: string;
  /** Where DAYTONA_API_KEY, DAYTONA_API_URL and DAYTONA_TARGET are read (default process.env). */
  hostEnv?: Record<string, string | undefined>;
}

/**
 * Daytona sandboxes over the official SDK: one sandbox per key (a run), named
 * after the key so a restarted host finds it again, created on first acquire,
 * started again when Daytona stopped it, and deleted on release.
 */
export class DaytonaSandboxAdapter implements SandboxAdapter {
  readonly name = "daytona";
  readonly options: ResolvedDaytonaOptions;
  private readonly hostEnv: Record<string, string | undefined>;
  private client: Daytona | undefined;
  private readonly live = new Map<string, Promise<ShellSandbox>>();

  constructor(options: DaytonaSandboxAdapterOptions) {
    const { agentDir, hostEnv, ...rest } = options;
    this.options = resolveDaytonaOptions(rest, agentDir ? `agent-${digest(agentDir).slice(0, 12)}` : "default");
    this.hostEnv = hostEnv ?? process.env;
  }

  /** The key's sandbox: the live one, a stopped one started again, or a new one. */
  acquire(key: string): Promise<Sandbox> {
    checkKey(key);
    let pending = this.live.get(key);
    if (!pending) {
      pending = this.open(key).catch((error: unknown) => {
        this.live.delete(key);
        throw error;
      });
      this.live.set(key, pending);
    }
    return pending;
  }

  /** Delete the key's sandbox. Releasing an unknown key is a no-op. */
  async release(key: string): Promise<void> {
    checkKey(key);
    this.live.delete(key);
    const remote = await this.find(key);
    if (!remote) return;
    await this.call("deleting the sandbox", () => remote.delete(Math.ceil(this.options.createTimeoutMs / 1000))).catch((error: unknown) => {
      // Already gone (deleted by another process, or by Daytona's auto-delete): nothing to release.
      if ((error as AssemblyLineError).details?.status !== 404) throw error;
    });
  }

  /** Close the SDK client (its event connection). */
  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) await client[Symbol.asyncDispose]();
  }

  /** The sandbox name a key maps to (stable across processes, so a restarted host finds it). */
  sandboxName(key: string): string {
    return `al-${this.options.scope}-${digest(key).slice(0, 24)}`;
  }

  private sdk(): Daytona {
    if (this.client) return this.client;
    const apiKey = this.hostEnv.DAYTONA_API_KEY;
    if (!apiKey) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", "the Daytona sandbox needs DAYTONA_API_KEY, which is not set", {
        fix: "Set DAYTONA_API_KEY (and DAYTONA_API_URL for a self-hosted Daytona) in the host's environment.",
      });
    }
    // An explicit URL keeps the SDK from reading the endpoint out of a .env file in the working folder.
    const apiUrl = this.options.apiUrl ?? this.hostEnv.DAYTONA_API_URL ?? DEFAULT_API_URL;
    const target = this.options.target ?? this.hostEnv.DAYTONA_TARGET;
    this.client = new Daytona({ apiKey, apiUrl, ...(target ? { target } : {}) });
    return this.client;
  }

  private async open(key: string, attempt = 0): Promise<ShellSandbox> {
    const existing = await this.find(key);
    if (existing) {
      const state = String(existing.state ?? "");
      const timeout = Math.ceil(this.options.createTimeoutMs / 1000);
      if (RESUMABLE.has(state)) await this.call("starting the sandbox again", () => existing.start(timeout));
      else if (TRANSIENT.has(state)) await this.call("waiting for the sandbox to start", () => existing.waitUntilStarted(timeout));
      else if (state === "destroyed" || state === "destroying") return this.create(key, attempt);
      else if (state !== "started") {
        throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `Daytona sandbox ${existing.name} of ${key} is in state ${state}`, {
          fix: "Delete or recover it in Daytona; the next run then gets a new one.",
          details: { key, state },
        });
      }
      return this.wrap(key, existing);
    }
    return this.create(key, attempt);
  }

  private async create(key: string, attempt: number): Promise<ShellSandbox> {
    const { options } = this;
    const resources = { ...(options.cpus ? { cpu: options.cpus } : {}), ...(options.memoryGiB ? { memory: options.memoryGiB } : {}), ...(options.diskGiB ? { disk: options.diskGiB } : {}) };
    const base = {
      name: this.sandboxName(key),
      labels: { [LABELS.sandbox]: "1", [LABELS.key]: key, [LABELS.scope]: options.scope },
      networkBlockAll: options.networkBlockAll,
      ...(options.autoStopMinutes !== undefined ? { autoStopInterval: options.autoStopMinutes } : {}),
    };
    const params = options.image ? { ...base, image: options.image, ...(Object.keys(resources).length ? { resources } : {}) } : { ...base, ...(options.baseSnapshot ? { snapshot: options.baseSnapshot } : {}) };
    let remote: DaytonaSdkSandbox;
    try {
      remote = await this.sdk().create(params, { timeout: Math.ceil(options.createTimeoutMs / 1000) });
    } catch (error) {
      // Another process created it first: use theirs.
      if (statusOf(error) === 409 && attempt === 0) return this.open(key, attempt + 1);
      throw providerError("Daytona", `creating the sandbox for ${key}`, error, [this.hostEnv.DAYTONA_API_KEY]);
    }
    const sandbox = this.wrap(key, remote);
    await sandbox.prepare().catch(async (error: unknown) => {
      await remote.delete().catch(() => undefined);
      throw error;
    });
    return sandbox;
  }

  private wrap(key: string, remote: DaytonaSdkSandbox): ShellSandbox {
    return new ShellSandbox(key, this.driver(remote), { timeoutMs: this.options.defaultTimeoutMs, maxOutputBytes: this.options.maxOutputBytes, env: this.options.env }, "Daytona");
  }

  /** The toolbox calls a sandbox needs: one command, a file download, a file upload. */
  private driver(remote: DaytonaSdkSandbox): SandboxDriver {
    return {
      runScript: async (script, limitMs) => {
        // The toolbox splits the command on spaces and quotes without a shell, so the script travels as base64.
        const command = `sh -c 'eval "$(echo ${Buffer.from(script, "utf8").toString("base64")} | base64 -d)"'`;
        const response = await this.call("running a command", () => remote.process.executeCommand(command, undefined, undefined, Math.ceil(limitMs / 1000)));
        return response.result ?? "";
      },
      downloadFile: async (path) => new Uint8Array(await this.call(`reading ${path}`, () => remote.fs.downloadFile(path))),
      uploadFile: async (path, content) => this.call(`writing ${path}`, () => remote.fs.uploadFile(Buffer.from(content), path)),
    };
  }

  private async find(key: string): Promise<DaytonaSdkSandbox | undefined> {
    const name = this.sandboxName(key);
    let remote: DaytonaSdkSandbox;
    try {
      remote = await this.sdk().get(name);
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw providerError("Daytona", `looking up sandbox ${name}`, error, [this.hostEnv.DAYTONA_API_KEY]);
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

  private async call<T>(action: string, operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw providerError("Daytona", action, error, [this.hostEnv.DAYTONA_API_KEY]);
    }
  }
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function checkKey(key: string): void {
  if (typeof key !== "string" || key === "") {
    throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `sandbox key ${JSON.stringify(key)} is not a non-empty string`, { fix: "Key sandboxes by the run id." });
  }
}
