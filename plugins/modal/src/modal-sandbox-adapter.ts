import { createHash } from "node:crypto";
import type { ModalClient, Sandbox as ModalSdkSandbox } from "modal";
import { AssemblyLineError, KILL_LEFTOVERS, MAX_READ_BYTES, checkReadSize, sizeScript, tracked, type Sandbox, type SandboxAdapter, type SandboxDriver, ShellSandbox, SandboxOpenings, successiveSandbox } from "@assemblyline-agents/core";
import { resolveModalOptions, type ModalSandboxOptions, type ResolvedModalOptions } from "./options.js";
import { grpcStatusOf, providerError } from "./provider-error.js";
import { withinDeadline } from "./deadline.js";

/** Tags mark what this adapter made, so a same-named sandbox it did not make is never used or terminated. */
export const TAGS = {
  sandbox: "dev.assembly-line.sandbox",
  key: "dev.assembly-line.sandbox.key",
  scope: "dev.assembly-line.sandbox.scope",
} as const;

export interface ModalSandboxAdapterOptions extends ModalSandboxOptions {
  /** The agent folder; the default scope is derived from it. */
  agentDir?: string;
  /** Where MODAL_TOKEN_ID, MODAL_TOKEN_SECRET, MODAL_SERVER_URL and MODAL_ENVIRONMENT are read (default process.env). */
  hostEnv?: Record<string, string | undefined>;
}

/**
 * Modal sandboxes over the official SDK (`modal`): one sandbox per key (a run)
 * in one Modal App, named after the key so a restarted host finds it again,
 * created on first acquire and terminated on release; listKeys finds the
 * scope's by their tags, so a host releases the ones a crash left. Modal has
 * no paused sandboxes: one whose lifetime ended is gone with its files, and
 * the key gets a new one.
 */
export class ModalSandboxAdapter implements SandboxAdapter {
  readonly name = "modal";
  readonly options: ResolvedModalOptions;
  // #private: util.inspect, console.log and JSON.stringify never show them, so the key they hold stays out of logs.
  readonly #hostEnv: Record<string, string | undefined>;
  #client: ModalClient | undefined;
  private readonly live = new SandboxOpenings<ShellSandbox>();
  /**
   * Each open sandbox's SDK handle (so a later acquire of its key can check Modal still runs it), its driver
   * (which a handle whose sandbox Modal ended makes its calls through) and what ends it.
   */
  readonly #opened = new WeakMap<ShellSandbox, { remote: ModalSdkSandbox; gone: () => void }>();

  constructor(options: ModalSandboxAdapterOptions) {
    const { agentDir, hostEnv, ...rest } = options;
    this.options = resolveModalOptions(rest, agentDir ? `agent-${digest(agentDir).slice(0, 12)}` : "default");
    this.#hostEnv = hostEnv ?? process.env;
  }

  /**
   * The key's sandbox: the live one, a running one found by its name, or a new one. A live one
   * Modal ended since (its lifetime or idle timeout ran out while the run waited) is replaced by a new one.
   */
  async acquire(key: string): Promise<Sandbox> {
    checkKey(key);
    return this.live.acquireLive(key, () => this.open(key), async (sandbox) => {
      const opened = this.#opened.get(sandbox);
      if (!opened || !(await this.ended(key, opened.remote))) return true;
      opened.gone();
      return false;
    });
  }

  /** Terminate the key's sandbox. Releasing an unknown key (or one Modal already ended) is a no-op. */
  async release(key: string): Promise<void> {
    checkKey(key);
    this.live.endTerm(key);
    // An acquire still creating the sandbox would leave it running after the lookup below.
    await this.live.settle(key);
    const remote = await this.find(key);
    if (remote) await this.terminate(remote);
  }

  /**
   * The keys this scope has running sandboxes for in the App: what a release
   * terminates (Modal keeps no stopped ones). Each listed page and each
   * sandbox's tags is one call, bounded by requestTimeoutMs.
   */
  async listKeys(): Promise<string[]> {
    const { app: appName, scope } = this.options;
    const client = await this.sdk();
    const environment = this.options.environment ?? this.#hostEnv.MODAL_ENVIRONMENT;
    let appId: string;
    try {
      appId = (await this.deadline(`looking up App ${appName}`, () => client.apps.fromName(appName, environment ? { environment } : {}))).appId;
    } catch (error) {
      // No App yet: no sandbox was ever made in it.
      if (grpcStatusOf(error) === "NOT_FOUND") return [];
      throw this.failure(`looking up App ${appName}`, error);
    }
    // The SDK asks for the next page (sandboxes made before the last one listed) until one comes back empty.
    const listing = client.sandboxes.list({ appId, tags: { [TAGS.sandbox]: "1", [TAGS.scope]: scope } });
    const keys = new Set<string>();
    for (;;) {
      const next = await this.call("listing sandboxes", () => this.deadline("listing sandboxes", () => listing.next()));
      if (next.done) break;
      const remote = next.value;
      let tags: Record<string, string>;
      try {
        // A listed sandbox carries only its id: the key is among its tags.
        tags = await this.deadline(`reading the tags of sandbox ${remote.sandboxId}`, () => remote.getTags());
      } catch (error) {
        // Ended since it was listed: nothing left to release.
        if (grpcStatusOf(error) === "NOT_FOUND") continue;
        throw this.failure(`reading the tags of sandbox ${remote.sandboxId}`, error);
      }
      // Modal filters by tags; checked again here, as find does, so another scope's key is never listed.
      const key = tags[TAGS.key];
      if (key && tags[TAGS.scope] === scope) keys.add(key);
    }
    return [...keys].sort();
  }

  /** Drop the SDK client (its connections); the sandboxes keep running. */
  close(): void {
    this.#client?.close();
    this.#client = undefined;
  }

  /** The sandbox name a key maps to: stable across processes and within Modal's 64-character object names. */
  sandboxName(key: string): string {
    return `al-${digest(`${this.options.scope}\0${key}`).slice(0, 40)}`;
  }

  /** The SDK client, made on first use: the SDK (and its gRPC stack) loads only when a run needs a sandbox. */
  private async sdk(): Promise<ModalClient> {
    if (this.#client) return this.#client;
    const tokenId = this.#hostEnv.MODAL_TOKEN_ID;
    const tokenSecret = this.#hostEnv.MODAL_TOKEN_SECRET;
    if (!tokenId || !tokenSecret) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `the Modal sandbox needs ${!tokenId ? "MODAL_TOKEN_ID" : "MODAL_TOKEN_SECRET"}, which is not set`, {
        fix: "Set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET (a Modal token: modal token new) in the host's environment.",
      });
    }
    const { ModalClient: Client } = await import("modal");
    const environment = this.options.environment ?? this.#hostEnv.MODAL_ENVIRONMENT;
    // The SDK takes its server and its sandbox backend from process.env only, in its synchronous
    // constructor: they are set for that call alone, so the host's choice applies and nothing else sees it.
    const pinned = { MODAL_SERVER_URL: this.options.serverUrl ?? this.#hostEnv.MODAL_SERVER_URL, MODAL_SANDBOX_V2: "1" };
    const saved = Object.fromEntries(Object.keys(pinned).map((name) => [name, process.env[name]]));
    try {
      for (const [name, value] of Object.entries(pinned)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      this.#client ??= new Client({ tokenId, tokenSecret, ...(environment ? { environment } : {}) });
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    return this.#client;
  }

  private async open(key: string, attempt = 0): Promise<ShellSandbox> {
    const existing = await this.find(key);
    if (!existing) return this.create(key, attempt);
    const sandbox = this.wrap(key, existing);
    // Opened by this process for the first time (not just lost a creation race): any command still running was left by the run's earlier owner.
    if (attempt === 0) await this.call("stopping commands left running", () => this.runToEnd(existing, "stopping commands left running", KILL_LEFTOVERS, 60_000));
    // The winner of a creation race may still be making /workspace, and a create abandoned past requestTimeoutMs may have finished at Modal without it: making it again is harmless.
    await sandbox.prepare();
    return sandbox;
  }

  private async create(key: string, attempt: number): Promise<ShellSandbox> {
    const { options } = this;
    const client = await this.sdk();
    const environment = options.environment ?? this.#hostEnv.MODAL_ENVIRONMENT;
    let remote: ModalSdkSandbox;
    try {
      const app = await this.deadline(`looking up App ${options.app}`, () => client.apps.fromName(options.app, { createIfMissing: true, ...(environment ? { environment } : {}) }));
      // The first sandbox of an image also builds it, within the same deadline.
      remote = await this.deadline(`creating the sandbox for ${key}`, () => client.sandboxes.create(app, client.images.fromRegistry(options.image), {
        name: this.sandboxName(key),
        tags: { [TAGS.sandbox]: "1", [TAGS.key]: key, [TAGS.scope]: options.scope },
        timeoutMs: options.lifetimeMs,
        ...(options.idleTimeoutMs ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
        blockNetwork: options.blockNetwork,
        ...(options.cpu ? { cpu: options.cpu } : {}),
        ...(options.memoryMiB ? { memoryMiB: options.memoryMiB } : {}),
      }));
    } catch (error) {
      // Another host created it first: use theirs.
      if (grpcStatusOf(error) === "ALREADY_EXISTS" && attempt === 0) return this.open(key, attempt + 1);
      throw this.failure(`creating the sandbox for ${key}`, error);
    }
    const sandbox = this.wrap(key, remote);
    await sandbox.prepare().catch(async (error: unknown) => {
      await this.deadline("terminating the sandbox", () => remote.terminate()).catch(() => undefined);
      throw error;
    });
    return sandbox;
  }

  /** The key's running sandbox, looked up by its name in the App; undefined when there is none. */
  private async find(key: string): Promise<ModalSdkSandbox | undefined> {
    const name = this.sandboxName(key);
    const client = await this.sdk();
    const environment = this.options.environment ?? this.#hostEnv.MODAL_ENVIRONMENT;
    let remote: ModalSdkSandbox;
    try {
      remote = await this.deadline(`looking up sandbox ${name}`, () => client.sandboxes.fromName(this.options.app, name, environment ? { environment } : {}));
    } catch (error) {
      // No running sandbox of that name (never made, released, or its lifetime ended); an App not made yet has none either.
      if (grpcStatusOf(error) === "NOT_FOUND") return undefined;
      throw this.failure(`looking up sandbox ${name}`, error);
    }
    const tags = await this.call(`reading the tags of sandbox ${name}`, () => this.deadline(`reading the tags of sandbox ${name}`, () => remote.getTags()));
    if (tags[TAGS.key] !== key || tags[TAGS.scope] !== this.options.scope) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `Modal sandbox ${name} in App ${this.options.app} was not made for ${key}`, {
        fix: "Terminate that sandbox in Modal, or set another scope or app.",
        details: { key, name },
      });
    }
    return remote;
  }

  /**
   * Whether Modal ended the key's live sandbox: no running sandbox has its name, or another one
   * does. A lookup that fails otherwise says nothing: the sandbox's own calls report it.
   */
  private async ended(key: string, remote: ModalSdkSandbox): Promise<boolean> {
    const name = this.sandboxName(key);
    const environment = this.options.environment ?? this.#hostEnv.MODAL_ENVIRONMENT;
    try {
      const client = await this.sdk();
      const found = await this.deadline(`looking up sandbox ${name}`, () => client.sandboxes.fromName(this.options.app, name, environment ? { environment } : {}));
      if (found !== remote) found.detach();
      return found.sandboxId !== remote.sandboxId;
    } catch (error) {
      return grpcStatusOf(error) === "NOT_FOUND";
    }
  }

  private async terminate(remote: ModalSdkSandbox): Promise<void> {
    try {
      await this.deadline("terminating the sandbox", () => remote.terminate());
    } catch (error) {
      // Already ended (terminated elsewhere, or its lifetime ran out): nothing to release.
      if (grpcStatusOf(error) !== "NOT_FOUND") throw this.failure("terminating the sandbox", error);
    } finally {
      remote.detach();
    }
  }

  private wrap(key: string, remote: ModalSdkSandbox): ShellSandbox {
    const { sandbox, gone } = successiveSandbox({
      key,
      provider: "Modal",
      defaults: { timeoutMs: this.options.defaultTimeoutMs, maxOutputBytes: this.options.maxOutputBytes, env: this.options.env },
      openings: this.live,
      acquire: () => this.acquire(key),
      driver: (gone) => this.driver(remote, gone),
    });
    this.#opened.set(sandbox, { remote, gone });
    return sandbox;
  }


  /** The command router calls a sandbox needs: one exec per script, `cat` to read and to write a file. */
  private driver(remote: ModalSdkSandbox, ended: () => void): SandboxDriver {
    const call = async <T>(action: string, operation: () => Promise<T>): Promise<T> => {
      try {
        return await operation();
      } catch (error) {
        if (grpcStatusOf(error) === "NOT_FOUND") ended();
        throw this.failure(action, error);
      }
    };
    return {
      // Modal's SDK refuses an exec whose arguments add up to 64 KiB or more; the pid-file lines tracked() adds fit in the rest.
      maxScriptBytes: 60_000,
      runScript: async (script, limitMs) =>
        call("running a command", async () => {
          const { stdout, stderr } = await this.runToEnd(remote, "running a command", tracked(script), limitMs);
          // The wrapper reports everything on stdout; stderr only explains a wrapper that did not run.
          return stdout || stderr;
        }),
      downloadFile: async (path) =>
        call(`reading ${path}`, async () => {
          checkReadSize("Modal", path, Number((await this.runToEnd(remote, `reading the size of ${path}`, sizeScript(path), 60_000)).stdout.trim()));
          const [bytes, stderr, code] = await this.deadline(`reading ${path}`, async () => {
            // And one byte past the limit, in case the file grew since: never read whole, and a larger file told apart from one exactly at it.
            const child = await remote.exec(["head", "-c", String(MAX_READ_BYTES + 1), "--", path], { mode: "binary" });
            return Promise.all([child.stdout.readBytes(), child.stderr.readText(), child.wait()]);
          });
          if (code !== 0) throw new Error(`head exited with ${code}: ${stderr.trim()}`);
          checkReadSize("Modal", path, bytes.length);
          return bytes;
        }),
      uploadFile: async (path, content) =>
        call(`writing ${path}`, async () => {
          const [, stderr, code] = await this.deadline(`writing ${path}`, async () => {
            const child = await remote.exec(["sh", "-c", 'cat > "$1"', "sh", path], { mode: "binary" });
            await child.stdin.writeBytes(content);
            await child.stdin.close();
            return Promise.all([child.stdout.readBytes(), child.stderr.readText(), child.wait()]);
          });
          if (code !== 0) throw new Error(`writing exited with ${code}: ${stderr.trim()}`);
        }),
    };
  }

  /** One SDK call, failed after requestTimeoutMs without an answer. */
  private deadline<T>(action: string, operation: () => Promise<T>): Promise<T> {
    return withinDeadline(action, this.options.requestTimeoutMs, "requestTimeoutMs", operation);
  }

  /** `script` run by `sh` in the sandbox, to its end: the call lasts as long as the command may (Modal takes exec timeouts in whole seconds). */
  private runToEnd(remote: ModalSdkSandbox, action: string, script: string, limitMs: number): Promise<{ stdout: string; stderr: string }> {
    const seconds = Math.ceil(limitMs / 1000) * 1000;
    return withinDeadline(action, seconds, "the command's timeout", async () => {
      const child = await remote.exec(["sh", "-c", script], { timeoutMs: seconds });
      const [stdout, stderr] = await Promise.all([child.stdout.readText(), child.stderr.readText(), child.wait()]);
      return { stdout, stderr };
    });
  }

  private async call<T>(action: string, operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw this.failure(action, error);
    }
  }

  private failure(action: string, error: unknown): AssemblyLineError {
    return providerError(action, error, [this.#hostEnv.MODAL_TOKEN_SECRET]);
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
