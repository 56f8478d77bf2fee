import { AssemblyLineError, isAssemblyLineError, type ConnectionAuth, type ConnectionPolicy, type JsonValue } from "@assemblyline-agents/core";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ANSWER_CAP_MARK, answerCap, cappedAnswers } from "./mcp-answer-cap.js";
import { capStdioAnswers } from "./mcp-stdio-cap.js";
import { connectionFetch, SentSecrets, type OutboundOptions } from "./outbound.js";
import { redactText } from "@assemblyline-agents/core";
import { envRedaction } from "./redact.js";
import { tooLarge } from "./response-limit.js";
import { plainSchema, uniqueNames } from "./tool-names.js";

/** Where an MCP server is: Streamable HTTP, or a local process over stdio. */
export type McpTarget = { url: string; auth?: ConnectionAuth } | { command: string; args?: string[]; env?: Record<string, string> };

/** How MCP sessions are held: one per connection for all runs, or one per run (`mcpSessions: "run"`), ended once idle for `idleMs`. */
export interface McpSessionPolicy {
  perRun: boolean;
  idleMs: number;
}

/** Where a use's client lives: the connection's shared one, a run's own, or one opened for this use alone and ended after it. */
interface ClientScope {
  run?: string;
  once?: boolean;
}

/** An MCP tool as described once and persisted: the server's name and the model's. */
export interface McpToolRecord {
  tool: string;
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/**
 * MCP clients through @modelcontextprotocol/sdk, one per connection, opened
 * on first use and reused; every HTTP request goes through the connection's
 * guarded fetch. The SDK loads lazily, so hosts without MCP connections never
 * import it.
 */
export class McpClients {
  /** Keyed by connection and what it connects to under which policy: a connection added again elsewhere, or held to other hosts, gets a client of its own. */
  private readonly clients = new Map<string, Promise<Client>>();
  /** The secrets each client's requests carried (kept across reconnects): a call's result is redacted of them. */
  private readonly sent = new Map<string, SentSecrets>();
  /** Clients whose handshake is under way. */
  private readonly opening = new Set<Client>();
  /** Uses (describe, call) under way per client; a released client is closed when its last one ends. */
  private readonly uses = new Map<Promise<Client>, { count: number; ended?: () => void }>();
  /** Clients taken out of `clients` by release: a use begun before it opens no cached client. */
  private readonly released = new WeakSet<Promise<Client>>();
  /** Released or forgotten clients whose calls in flight have not all finished: close() ends them all the same. */
  private readonly draining = new Set<Promise<Client>>();
  /** A run's own client, by key: ended when this fires, after sessions.idleMs without a use. */
  private readonly idle = new Map<string, NodeJS.Timeout>();
  /** close() was called: no use opens a client any more, since nothing would end its session. */
  private closed = false;

  constructor(
    private readonly outbound: OutboundOptions,
    /** Every MCP request (handshake, listing, call) fails after this long: the SDK's RequestOptions.timeout. */
    private readonly timeoutMs: number,
    /** A tool result whose serialized content is longer is answered as an error (maxResponseBytes). */
    private readonly maxResultBytes: number,
    private readonly sessions: McpSessionPolicy = { perRun: false, idleMs: 0 },
  ) {}

  /** The server's tools; the secrets its requests carried are added to `sent`. */
  async describe(connection: string, target: McpTarget, policy: ConnectionPolicy, sent?: SentSecrets): Promise<McpToolRecord[]> {
    // With a session per run, the listing's session serves no run: it is ended once the tools are read.
    const tools = await this.using(connection, target, policy, { once: this.sessions.perRun }, sent, "listing its tools", async (client) => {
      const listed: Array<{ name: string; description?: string; inputSchema: unknown }> = [];
      const seen = new Set<string>();
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : {}, { timeout: this.timeoutMs });
        listed.push(...page.tools);
        cursor = page.nextCursor;
        // A server that hands back a cursor it gave before would be listed for ever.
        if (cursor !== undefined && seen.has(cursor)) throw new Error(`the server repeated the cursor ${JSON.stringify(cursor)} after ${listed.length} tools`);
        if (cursor !== undefined) seen.add(cursor);
        if (seen.size >= MAX_TOOL_PAGES) throw new Error(`the server listed more than ${MAX_TOOL_PAGES} pages of tools`);
      } while (cursor);
      return listed;
    });
    const names = uniqueNames(tools.map((tool) => tool.name), connection);
    return tools.map((tool, index) => ({ tool: tool.name, name: names[index]!, description: tool.description ?? tool.name, inputSchema: plainSchema(tool.inputSchema) }));
  }

  /** Call one tool; a tool error is a result the model sees, a refusal or a dead server throws. The secrets its requests carried are added to `options.sent`. */
  async call(connection: string, target: McpTarget, policy: ConnectionPolicy, tool: string, input: unknown, options: { signal: AbortSignal; idempotencyKey: string; runId: string; sent?: SentSecrets }): Promise<JsonValue> {
    let result: Awaited<ReturnType<Client["callTool"]>>;
    const scope = this.sessions.perRun ? { run: options.runId } : {};
    try {
      result = await this.using(
        connection,
        target,
        policy,
        scope,
        options.sent,
        `calling ${tool}`,
        (client) =>
          client.callTool(
            { name: tool, arguments: (input ?? {}) as Record<string, unknown>, _meta: { "assembly-line/idempotency-key": options.idempotencyKey } },
            undefined,
            { signal: options.signal, timeout: this.timeoutMs },
          ),
        options.signal,
      );
    } catch (error) {
      // The answer was cut unread (cappedAnswers): the same result as one too large once read.
      if (wasCut(error)) return tooLarge(`${connection} tool ${tool}`, this.maxResultBytes);
      throw error;
    }
    const content = (result.content ?? []) as Array<{ type: string; text?: string }>;
    // Measured as it would enter the model's context: every part (text, images' base64, resources) and structuredContent.
    const serialized = JSON.stringify({ content, ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}) });
    if (Buffer.byteLength(serialized) > this.maxResultBytes) return tooLarge(`${connection} tool ${tool}`, this.maxResultBytes);
    const text = content.filter((part) => part.type === "text" && typeof part.text === "string").map((part) => part.text).join("\n");
    if (result.isError) return { error: text || `${connection} tool ${tool} failed` };
    return JSON.parse(serialized) as JsonValue;
  }

  /**
   * The connection is no longer provided: its clients (the shared one, or each run's) are taken out
   * (a later use opens a fresh one) and, once the calls in flight on each have finished, its session
   * is ended on the server and the client closed (a stdio server stopped), as close() does for every client.
   */
  async release(connection: string, target: McpTarget, policy: ConnectionPolicy): Promise<void> {
    const shared = clientKey(connection, target, policy);
    const keys = new Set([...this.clients.keys(), ...this.sent.keys()].filter((key) => key === shared || key.startsWith(`${shared}${RUN_SEPARATOR}`)));
    await Promise.all([...keys].map((key) => this.releaseKey(key)));
  }

  private async releaseKey(key: string): Promise<void> {
    clearTimeout(this.idle.get(key));
    this.idle.delete(key);
    this.sent.delete(key);
    const client = this.clients.get(key);
    if (!client) return;
    this.clients.delete(key);
    this.released.add(client);
    this.draining.add(client);
    await this.drained(client);
    // Ended by close() meanwhile.
    if (!this.draining.delete(client)) return;
    const opened = await client.catch(() => undefined);
    if (opened) await endSession(opened, Math.min(this.timeoutMs, SESSION_END_MS));
  }

  /**
   * Close every client: a session the server keeps is ended (DELETE, as the MCP spec asks of a
   * client leaving), waiting at most SESSION_END_MS for it; a stdio server is stopped. A handshake
   * still under way is stopped at once, not awaited: a server that never answers would otherwise
   * hold the host's shutdown for the request timeout, and its process would outlive the host.
   * A use begun afterwards (a run the host's shutdown did not wait for) is refused.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.idle.values()) clearTimeout(timer);
    this.idle.clear();
    // A released client still finishing calls is ended now too: the host is going, its calls with it.
    const clients = [...this.clients.values(), ...this.draining];
    this.clients.clear();
    this.draining.clear();
    const opening = [...this.opening];
    this.opening.clear();
    await Promise.allSettled([...opening.map((client) => client.close()), ...clients.map(async (client) => endSession(await client, Math.min(this.timeoutMs, SESSION_END_MS)))]);
  }

  /**
   * Run `use` with the connection's client. A server that no longer knows the
   * session (it restarted: HTTP 404 on a session, which the MCP spec says means
   * "start a new one") gets a new session and the request once more, since the
   * server refused it unread. A client whose transport failed, or whose answer was
   * cut, is dropped, so the next use connects again instead of failing for ever;
   * the calls other runs have in flight on it finish first. A use that failed
   * because its own `signal` was aborted says nothing of the client: it is kept.
   */
  private async using<T>(connection: string, target: McpTarget, policy: ConnectionPolicy, scope: ClientScope, sent: SentSecrets | undefined, doing: string, use: (client: Client) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const shared = clientKey(connection, target, policy);
    const key = scope.run === undefined ? shared : `${shared}${RUN_SEPARATOR}${scope.run}`;
    let clientSent = scope.once ? new SentSecrets() : this.sent.get(key);
    if (!clientSent) this.sent.set(key, (clientSent = new SentSecrets()));
    let previous: Promise<Client> | undefined;
    try {
      for (let attempt = 0; ; attempt += 1) {
        if (this.closed) throw closedUnder(connection, doing);
        // A retry of a use whose connection was released meanwhile gets a client of its own, closed after it: none is left behind for a connection no longer provided.
        const own = scope.once === true || (previous !== undefined && this.released.has(previous));
        const opened = own ? this.open(connection, target, policy, clientSent) : this.client(key, connection, target, policy, clientSent);
        previous = opened;
        clearTimeout(this.idle.get(key));
        this.idle.delete(key);
        this.enter(opened);
        try {
          return await use(await opened);
        } catch (error) {
          // close() ended the session under the call: not the service failing, and not the call's result.
          if (this.closed) throw closedUnder(connection, doing);
          // A cut answer drops the client too (the SDK would otherwise resume the stream and read the rest); its server is still there to end the session.
          const drop = wasCut(error) ? "end" : signal?.aborted === true ? undefined : await droppedBy(error);
          if (drop) this.forget(key, opened, drop);
          if (attempt === 0 && (await isSessionGone(error))) continue;
          throw failure(connection, doing, error);
        } finally {
          this.leave(opened);
          if (own) void opened.then((client) => endSession(client, Math.min(this.timeoutMs, SESSION_END_MS))).catch(() => undefined);
          else if (scope.run !== undefined) this.endWhenIdle(key, opened);
        }
      }
    } finally {
      // Calls share the client's session, so which secret carried this one is not known: all it sent lately.
      sent?.addAll(clientSent);
    }
  }

  private client(key: string, connection: string, target: McpTarget, policy: ConnectionPolicy, sent: SentSecrets): Promise<Client> {
    let client = this.clients.get(key);
    if (!client) {
      const opening = this.open(connection, target, policy, sent);
      client = opening;
      this.clients.set(key, opening);
      // A failed handshake is not cached: the next use tries again.
      opening.then(
        (opened) => {
          // A stdio server that exited (or a transport the SDK closed) is opened again on next use.
          opened.onclose = () => {
            if (this.clients.get(key) === opening) this.clients.delete(key);
          };
        },
        () => {
          if (this.clients.get(key) === opening) this.clients.delete(key);
        },
      );
    }
    return client;
  }

  /**
   * A run's own client is ended once no use of it has begun for sessions.idleMs: the host cannot
   * know when a run is over (it may be paused for days), and a resumed run opens a session again.
   */
  private endWhenIdle(key: string, client: Promise<Client>): void {
    if (this.uses.has(client) || this.clients.get(key) !== client) return;
    clearTimeout(this.idle.get(key));
    const timer = setTimeout(() => {
      if (this.idle.get(key) !== timer) return;
      this.idle.delete(key);
      if (this.clients.get(key) === client) void this.releaseKey(key).catch(() => undefined);
    }, this.sessions.idleMs);
    timer.unref();
    this.idle.set(key, timer);
  }

  private enter(client: Promise<Client>): void {
    const uses = this.uses.get(client);
    if (uses) uses.count += 1;
    else this.uses.set(client, { count: 1 });
  }

  private leave(client: Promise<Client>): void {
    const uses = this.uses.get(client);
    if (!uses || (uses.count -= 1) > 0) return;
    this.uses.delete(client);
    uses.ended?.();
  }

  /** Resolves once no use of `client` is under way. */
  private drained(client: Promise<Client>): Promise<void> {
    const uses = this.uses.get(client);
    if (!uses) return Promise.resolve();
    return new Promise((resolve) => {
      const before = uses.ended;
      uses.ended = () => {
        before?.();
        resolve();
      };
    });
  }

  /**
   * Take `client` out of the table at once (the next use opens another) and let it go once the uses
   * under way on it have finished: it is shared, and one run's failed call must not fail another's
   * still in flight. `end`: its server is still there, so the session is ended on it (as close()
   * does), else it would keep it until it expires; `close`: the client is only closed (the server is
   * unreachable, or no longer knows the session).
   */
  private forget(key: string, client: Promise<Client>, how: "end" | "close"): void {
    if (this.clients.get(key) !== client) return;
    this.clients.delete(key);
    this.draining.add(client);
    void this.drained(client).then(async () => {
      // Ended by close() meanwhile.
      if (!this.draining.delete(client)) return;
      const opened = await client;
      await (how === "end" ? endSession(opened, Math.min(this.timeoutMs, SESSION_END_MS)) : opened.close());
    }).catch(() => undefined);
  }

  private async open(connection: string, target: McpTarget, policy: ConnectionPolicy, sent: SentSecrets): Promise<Client> {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const client = new Client({ name: "assembly-line", version: "0.1.0" });
    let stderr = "";
    this.opening.add(client);
    try {
      if ("url" in target) {
        const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
        // Redirects are left to the guarded fetch, which re-checks every hop.
        const fetchFn = cappedAnswers(connectionFetch(connection, policy, target.auth, this.outbound, sent), answerCap(this.maxResultBytes));
        await client.connect(new StreamableHTTPClientTransport(new URL(target.url), { fetch: fetchFn, redirectPolicy: "follow" }), { timeout: this.timeoutMs });
      } else {
        const { StdioClientTransport, getDefaultEnvironment } = await import("@modelcontextprotocol/sdk/client/stdio.js");
        const cap = answerCap(this.maxResultBytes);
        const transport = new StdioClientTransport({ command: target.command, args: target.args ?? [], env: { ...getDefaultEnvironment(), ...(target.env ?? {}) }, stderr: "pipe", maxBufferSize: cap });
        capStdioAnswers(transport, cap);
        // The tail of what the server printed is read all along (a full pipe would block the server) and says why a start failed.
        transport.stderr?.on("data", (chunk: Buffer) => {
          stderr = (stderr + chunk.toString("utf8")).slice(-STDERR_TAIL);
        });
        await client.connect(transport, { timeout: this.timeoutMs });
      }
    } catch (error) {
      await client.close().catch(() => undefined);
      const printed = "command" in target ? withoutEnvValues(stderr.trim(), target.env) : "";
      throw failure(connection, "connecting", printed ? new Error(`${error instanceof Error ? error.message : String(error)}; the server printed: ${printed.replace(/\s*\n\s*/g, " | ")}`, { cause: error }) : error);
    } finally {
      this.opening.delete(client);
    }
    return client;
  }
}

/** Between a connection's key and the run a client of its own belongs to (JSON text never holds it raw). */
const RUN_SEPARATOR = "\u0000run:";

/** One client per connection, what it connects to, and the policy it is held to. */
function clientKey(connection: string, target: McpTarget, policy: ConnectionPolicy): string {
  return JSON.stringify([connection, target, policy.allowedHosts, policy.onlyAllowedHosts, policy.grantHosts ?? null]);
}

/** Whether `error` (or what it wraps) is the error cappedAnswers put in place of an answer it cut. */
function wasCut(error: unknown, depth = 0): boolean {
  if (depth > 5 || typeof error !== "object" || error === null) return false;
  const data = (error as { data?: unknown }).data;
  if (typeof data === "object" && data !== null && ANSWER_CAP_MARK in data) return true;
  return wasCut((error as { cause?: unknown }).cause, depth + 1);
}

/** The longest close() waits for a server to end a session (less when requestTimeoutMs is). */
const SESSION_END_MS = 5_000;

/** End the client's session on the server, if it keeps one, waiting at most `ms`; then close the client. */
async function endSession(client: Client, ms: number): Promise<void> {
  const transport = client.transport as { terminateSession?: () => Promise<void> } | undefined;
  if (typeof transport?.terminateSession === "function") {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref();
    });
    // A server that refuses or does not answer keeps its session until it expires it: the client closes all the same.
    await Promise.race([transport.terminateSession().catch(() => undefined), waited]);
    clearTimeout(timer);
  }
  await client.close();
}

/** Characters of a stdio server's stderr kept for the error of a failed start. */
const STDERR_TAIL = 1000;

/** The host gave the server its credentials through env: a server that prints them must not put them in an error. */
function withoutEnvValues(text: string, env: Record<string, string> | undefined): string {
  return redactText(text, envRedaction(env));
}

/** Pages of tools/list read before a server is taken to list for ever. */
const MAX_TOOL_PAGES = 1000;

/** The server answered 404 to a request that carried its session: the session is gone (MCP spec, session management). */
async function isSessionGone(error: unknown): Promise<boolean> {
  const { StreamableHTTPError } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  return error instanceof StreamableHTTPError && error.code === 404;
}

/**
 * Whether a use's failure drops the client, and how (the caller tells aborts and cut answers
 * apart). Not an answer of the server (a JSON-RPC error, a timeout it may still answer) nor a
 * refusal: those leave it usable. An HTTP status the server answered with: its session is ended on
 * it (`end`), but a 404, by which it says it no longer knows the session. Anything else (the
 * request failed on the way): the client is only closed.
 */
async function droppedBy(error: unknown): Promise<"end" | "close" | undefined> {
  const [{ McpError }, { StreamableHTTPError }] = await Promise.all([import("@modelcontextprotocol/sdk/types.js"), import("@modelcontextprotocol/sdk/client/streamableHttp.js")]);
  if (error instanceof McpError || isAssemblyLineError(error)) return undefined;
  if (error instanceof StreamableHTTPError && error.code !== 404) return "end";
  return "close";
}

/**
 * A use refused, or cut, because the connections were closed (the host is shutting down): a session
 * opened now would never be ended. Its code is one the runtime takes for "this process cannot go
 * on with the run": a tool call failing with it is left open, not recorded, and the next start that
 * resumes the run calls it again, with the same idempotency key.
 */
export function closedUnder(connection: string, doing: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_HOST_DRAINING", `connection "${connection}" was not used for ${doing}: the connections were closed (the host is shutting down), and a session opened now would never be ended`, {
    fix: "Nothing to fix: the host is stopping. The call is left open; the next start resumes the run and makes it again.",
  });
}

/** Whether `error` is closedUnder's: a call the next start makes again, not a result. */
export function isClosedUnder(error: unknown): boolean {
  return isAssemblyLineError(error, "AL_ERR_HOST_DRAINING");
}

/** Refusals of the guard keep their code; anything else is the connection failing. */
export function failure(connection: string, doing: string, error: unknown): Error {
  const refusal = findRefusal(error);
  if (refusal) return refusal;
  return new AssemblyLineError("AL_ERR_CONNECTION_FAILED", `connection "${connection}" failed ${doing}: ${reason(error)}`, {
    fix: "Check the service is up and speaks the protocol of its kind.",
    cause: error,
  });
}

function findRefusal(error: unknown, depth = 0): Error | undefined {
  if (depth > 5 || typeof error !== "object" || error === null) return undefined;
  if (isAssemblyLineError(error)) return error;
  return findRefusal((error as { cause?: unknown }).cause, depth + 1);
}

/** What went wrong, with the cause fetch hides behind "fetch failed" (connect ECONNREFUSED 127.0.0.1:8080, ENOTFOUND, ...). */
function reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const inner = cause instanceof Error ? cause.message || (cause as { code?: string }).code : undefined;
  return inner && !error.message.includes(inner) ? `${error.message} (${inner})` : error.message;
}
