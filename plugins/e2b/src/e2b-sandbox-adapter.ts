import { createHash } from "node:crypto";
import type { Sandbox as E2bSdkSandbox, SandboxInfo } from "e2b";
import { AssemblyLineError, type Sandbox, type SandboxAdapter } from "@assemblyline-agents/core";
import { resolveE2bOptions, type E2bSandboxOptions, type ResolvedE2bOptions } from "./options.js";
import { providerError } from "./provider-error.js";
import { ShellSandbox, type SandboxDriver } from "./shell-sandbox.js";

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

/**
 * E2B sandboxes over the official SDK: one sandbox per key (a run), tagged with
 * the key in its metadata so a restarted host finds it again (E2B resumes a
 * paused one on connect), created on first acquire and killed on release.
 */
export class E2bSandboxAdapter implements SandboxAdapter {
  readonly name = "e2b";
  readonly options: ResolvedE2bOptions;
  private readonly hostEnv: Record<string, string | undefined>;
  private readonly live = new Map<string, Promise<ShellSandbox>>();

  constructor(options: E2bSandboxAdapterOptions) {
    const { agentDir, hostEnv, ...rest } = options;
    this.options = resolveE2bOptions(rest, agentDir ? `agent-${createHash("sha256").update(agentDir).digest("hex").slice(0, 12)}` : "default");
    this.hostEnv = hostEnv ?? process.env;
  }

  /** The key's sandbox: the live one, a running or paused one found by its metadata, or a new one. */
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

  /** Kill the key's sandbox. Releasing an unknown key is a no-op. */
  async release(key: string): Promise<void> {
    checkKey(key);
    this.live.delete(key);
    for (const found of await this.find(key)) {
      // false: already gone (killed elsewhere, or E2B's lifetime ended), which is what release wants.
      await this.call("killing the sandbox", async () => (await sdk()).kill(found.sandboxId, this.connection()));
    }
  }

  private connection(): { apiKey: string; apiUrl?: string; domain?: string; sandboxUrl?: string } {
    const apiKey = this.hostEnv.E2B_API_KEY;
    if (!apiKey) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", "the E2B sandbox needs E2B_API_KEY, which is not set", {
        fix: "Set E2B_API_KEY (and E2B_DOMAIN or E2B_API_URL for a self-hosted E2B) in the host's environment.",
      });
    }
    const apiUrl = this.options.apiUrl ?? this.hostEnv.E2B_API_URL;
    const domain = this.options.domain ?? this.hostEnv.E2B_DOMAIN;
    const sandboxUrl = this.options.sandboxUrl ?? this.hostEnv.E2B_SANDBOX_URL;
    // Passed explicitly, so the SDK's own reading of process.env never overrides the host's choice.
    return { apiKey, ...(apiUrl ? { apiUrl } : {}), ...(domain ? { domain } : {}), ...(sandboxUrl ? { sandboxUrl } : {}) };
  }

  private async open(key: string): Promise<ShellSandbox> {
    const [existing] = await this.find(key);
    if (existing) {
      // Connecting resumes a paused sandbox and restarts its lifetime.
      const remote = await this.call("connecting to the sandbox", async () => (await sdk()).connect(existing.sandboxId, { ...this.connection(), timeoutMs: this.options.lifetimeMs }));
      return this.wrap(key, remote);
    }
    const { options } = this;
    const params = {
      ...this.connection(),
      metadata: { [METADATA.sandbox]: "1", [METADATA.key]: key, [METADATA.scope]: options.scope },
      timeoutMs: options.lifetimeMs,
      allowInternetAccess: options.allowInternetAccess,
      lifecycle: { onTimeout: options.onTimeout },
    };
    const Client = await sdk();
    const remote = await this.call(`creating the sandbox for ${key}`, () => (options.template ? Client.create(options.template, params) : Client.create(params)));
    const sandbox = this.wrap(key, remote);
    await sandbox.prepare().catch(async (error: unknown) => {
      await remote.kill().catch(() => undefined);
      throw error;
    });
    return sandbox;
  }

  private wrap(key: string, remote: E2bSdkSandbox): ShellSandbox {
    return new ShellSandbox(key, this.driver(remote), { timeoutMs: this.options.defaultTimeoutMs, maxOutputBytes: this.options.maxOutputBytes, env: this.options.env }, "E2B");
  }

  /** The envd calls a sandbox needs: one process, a file read, a file write. */
  private driver(remote: E2bSdkSandbox): SandboxDriver {
    return {
      runScript: async (script, limitMs) => {
        const result = await this.call("running a command", () => remote.commands.run(script, { timeoutMs: limitMs }));
        return result.stdout;
      },
      downloadFile: async (path) => this.call(`reading ${path}`, () => remote.files.read(path, { format: "bytes" })),
      uploadFile: async (path, content) => {
        // A copy whose buffer is exactly the bytes: the SDK sends the whole underlying ArrayBuffer.
        const bytes = content.slice();
        await this.call(`writing ${path}`, () => remote.files.write(path, bytes.buffer as ArrayBuffer));
      },
    };
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
      throw providerError("E2B", action, error, [this.hostEnv.E2B_API_KEY]);
    }
  }
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
