import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";
import { AssemblyLineError, type JsonValue, type RuntimeLogger } from "@assemblyline-agents/core";
import { redactProviderMessage } from "./provider-failure.js";

/** A request the app-server sends the client (it waits for our answer). */
export interface ServerRequest {
  id: number | string;
  method: string;
  params: Record<string, unknown>;
}

export interface AppServerHandlers {
  onNotification(method: string, params: Record<string, unknown>): void;
  /** Answer a server request: return the result, or throw to answer with a JSON-RPC error. */
  onRequest(request: ServerRequest): Promise<unknown>;
}

/**
 * One `codex app-server` process spoken to over stdio: newline-delimited
 * JSON-RPC (requests with ids, notifications without, and requests the server
 * sends us, such as `item/tool/call`). Everything it writes to stderr is logged
 * at debug level; an exit fails every request in flight.
 */
export class CodexAppServer {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void; method: string }>();
  private nextId = 1;
  private exited: Error | undefined;
  /** How the process ended, once it has: `(<signal or exit code>)`, then the reason its stderr gave. */
  exitReason: string | undefined;
  private readonly stderr = new StderrReason();
  readonly closed: Promise<void>;

  constructor(
    command: { file: string; args: string[] },
    private readonly env: Record<string, string | undefined>,
    private readonly handlers: AppServerHandlers,
    private readonly logger: RuntimeLogger,
  ) {
    this.child = spawn(command.file, command.args, { env: env as NodeJS.ProcessEnv, stdio: ["pipe", "pipe", "pipe"] });
    this.closed = new Promise((resolve) => {
      this.child.once("close", (code, signal) => {
        const said = this.stderr.reason();
        this.exitReason = `(${signal ?? `code ${code}`})${said ? `: ${redactProviderMessage(said, env)}` : ""}`;
        this.exited = new AssemblyLineError("AL_ERR_CODEX_APP_SERVER", `codex app-server exited ${this.exitReason}`, {
          fix: "Check that the codex binary runs (`npx codex --version`) and its CODEX_HOME config.",
        });
        for (const waiter of this.pending.values()) waiter.reject(this.exited);
        this.pending.clear();
        resolve();
      });
    });
    this.child.once("error", (error) => {
      this.exited = new AssemblyLineError("AL_ERR_CODEX_UNAVAILABLE", `cannot start ${command.file}: ${error.message}`, {
        fix: "Install the Codex CLI (`npm i @openai/codex`) or set CODEX_BINARY to the codex binary.",
      });
      for (const waiter of this.pending.values()) waiter.reject(this.exited);
      this.pending.clear();
    });
    createInterface({ input: this.child.stdout }).on("line", (line) => this.receive(line));
    createInterface({ input: this.child.stderr }).on("line", (line) => {
      this.stderr.add(line);
      this.logger.debug({ event: "codex.stderr", line }, "codex app-server stderr");
    });
    // A write after the process died must not crash the host.
    this.child.stdin.on("error", () => undefined);
  }

  request<T>(method: string, params: unknown): Promise<T> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, method });
      this.write({ id, method, params });
    });
  }

  notify(method: string, params?: unknown): void {
    this.write(params === undefined ? { method } : { method, params });
  }

  /** Stop the process (SIGTERM, then SIGKILL) and wait for it. */
  async close(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill("SIGTERM");
      const timer = setTimeout(() => this.child.kill("SIGKILL"), 3_000);
      timer.unref();
      await this.closed;
      clearTimeout(timer);
    }
  }

  private write(message: Record<string, unknown>): void {
    this.child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  private receive(line: string): void {
    let message: { id?: number | string; method?: string; params?: Record<string, unknown>; result?: unknown; error?: { code?: number; message?: string } };
    try {
      message = JSON.parse(line) as typeof message;
    } catch {
      this.logger.debug({ event: "codex.stdout_unparsed", line: line.slice(0, 200) }, "codex app-server wrote a line that is not JSON");
      return;
    }
    // JSON that is no JSON-RPC message (`null`, a number, an array) is skipped like a line that is not JSON.
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      this.logger.debug({ event: "codex.stdout_unparsed", line: line.slice(0, 200) }, "codex app-server wrote a line that is not a JSON-RPC message");
      return;
    }
    if (message.method !== undefined && message.id !== undefined) {
      const request: ServerRequest = { id: message.id, method: message.method, params: message.params ?? {} };
      this.handlers.onRequest(request).then(
        (result) => this.write({ id: request.id, result: result as JsonValue }),
        (error: unknown) => this.write({ id: request.id, error: { code: -32000, message: error instanceof Error ? error.message : String(error) } }),
      );
      return;
    }
    if (message.method !== undefined) {
      this.handlers.onNotification(message.method, message.params ?? {});
      return;
    }
    const waiter = typeof message.id === "number" ? this.pending.get(message.id) : undefined;
    if (!waiter) return;
    this.pending.delete(message.id as number);
    if (message.error) {
      waiter.reject(
        // Redacted: Codex quotes the config value it refused, which may be a key pasted in the wrong place.
        new AssemblyLineError("AL_ERR_CODEX_APP_SERVER", `codex app-server refused ${waiter.method}: ${redactProviderMessage(String(message.error.message ?? "unknown error"), this.env)} (code ${message.error.code ?? "?"})`, {
          fix: "Check the Codex CLI version (this route is tested with @openai/codex 0.169) and its config.",
        }),
      );
    } else {
      waiter.resolve(message.result);
    }
  }
}

/**
 * What the app-server's stderr says about why it exited. Codex prints its
 * failure as an `Error: ...` block (the message and its context, such as the
 * config key at fault) followed by a `Stack backtrace:` of frames that say
 * nothing to a user; the first `Error:` block is kept whole, and without one
 * the last lines that are not backtrace frames. Redacted by the caller: the
 * message may quote a provider's URL or a key from the config.
 */
class StderrReason {
  private readonly tail: string[] = [];
  private readonly error: string[] = [];
  /** Where the lines are: before any `Error:` line, in the first error block, or past it. */
  private place: "before" | "error" | "after" = "before";
  private inBacktrace = false;

  add(raw: string): void {
    const line = raw.replace(/\u001b\[[0-9;]*m/g, "").trimEnd().slice(0, 300);
    if (/^\s*Stack backtrace:/.test(line)) this.inBacktrace = true;
    if (this.place === "error" && (line === "" || this.inBacktrace || this.error.length >= 10)) this.place = "after";
    if (this.place === "before" && /^Error:/.test(line)) this.place = "error";
    if (this.place === "error") {
      this.error.push(line);
      return;
    }
    // A backtrace runs to the end of its report; a new `Error:` line or an unindented line ends it.
    if (this.inBacktrace && !/^\s*Stack backtrace:/.test(line) && line !== "" && !/^\s/.test(line)) this.inBacktrace = false;
    if (this.inBacktrace || line === "" || BACKTRACE_FRAME.test(line)) return;
    this.tail.push(line);
    if (this.tail.length > 5) this.tail.shift();
  }

  reason(): string | undefined {
    const lines = this.error.length > 0 ? this.error : this.tail;
    return lines.length > 0 ? lines.join(" | ") : undefined;
  }
}

/** A frame of a Rust backtrace (`  3: codex::main`, `      at src/main.rs:12:5`). */
const BACKTRACE_FRAME = /^\s+(\d+: |at )/;
