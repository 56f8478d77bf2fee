import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";
import { AssemblyLineError, type JsonValue, type RuntimeLogger } from "@assemblyline-agents/core";

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
  private readonly stderrTail: string[] = [];
  readonly closed: Promise<void>;

  constructor(
    command: { file: string; args: string[] },
    env: Record<string, string | undefined>,
    private readonly handlers: AppServerHandlers,
    private readonly logger: RuntimeLogger,
  ) {
    this.child = spawn(command.file, command.args, { env: env as NodeJS.ProcessEnv, stdio: ["pipe", "pipe", "pipe"] });
    this.closed = new Promise((resolve) => {
      this.child.once("close", (code, signal) => {
        this.exited = new AssemblyLineError("AL_ERR_CODEX_APP_SERVER", `codex app-server exited (${signal ?? `code ${code}`})${this.stderrTail.length ? `: ${this.stderrTail.join(" | ")}` : ""}`, {
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
      this.stderrTail.push(line.replace(/\u001b\[[0-9;]*m/g, "").slice(0, 300));
      if (this.stderrTail.length > 5) this.stderrTail.shift();
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
        new AssemblyLineError("AL_ERR_CODEX_APP_SERVER", `codex app-server refused ${waiter.method}: ${message.error.message ?? "unknown error"} (code ${message.error.code ?? "?"})`, {
          fix: "Check the Codex CLI version (this route is tested with @openai/codex 0.169) and its config.",
        }),
      );
    } else {
      waiter.resolve(message.result);
    }
  }
}
