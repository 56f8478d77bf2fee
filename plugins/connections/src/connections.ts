import {
  AssemblyLineError,
  combineRedactions,
  defineTool,
  redactError,
  redactValue,
  type ConnectionApproval,
  type ConnectionAuth,
  type ConnectionDefinition,
  type ConnectionPolicy,
  type ConnectionProvider,
  type DynamicConnectionSpec,
  type JsonValue,
  type OutboundResolver,
  type RuntimeLogger,
  type SecretRedaction,
  type ToolDefinition,
} from "@assemblyline-agents/core";
import { checkConnectionsOptions } from "./config-schema.js";
import { checkDefinition, isDynamicSpec, type AnyDefinition } from "./definition.js";
import type { GrantStore } from "./grants.js";
import { describeHttp, type HttpRecord } from "./http.js";
import { fillPath, jsonBody, send, withTimeout, type RequestBody } from "./http-request.js";
import { McpClients, failure, isClosedUnder, type McpTarget, type McpToolRecord } from "./mcp.js";
import { describeOpenApi, openApiRequest, type OpenApiRecord } from "./openapi.js";
import { connectionFetch, guardedFetchFor, refuseSpecialAddresses, SentSecrets, withGrant } from "./outbound.js";
import { DEFAULT_MAX_RESPONSE_BYTES } from "./response-limit.js";
import { envRedaction, grantRedaction, redactionFor } from "./redact.js";

export interface ConnectionsOptions {
  /** Host-declared connections by name (snake_case): defineMcpConnection / defineOpenApiConnection / defineHttpConnection. */
  connections?: Record<string, ConnectionDefinition>;
  /** Where `auth: { grant }` secrets are read from (EncryptedGrantStore by default in hosts). */
  grants?: GrantStore;
  /** DNS resolver for the address guard; default the system's. */
  resolve?: OutboundResolver;
  /** How long one request to a service may take; default 60 000 ms, the MCP SDK's own request timeout. */
  requestTimeoutMs?: number;
  /** The most bytes of one answer (an HTTP or OpenAPI response body, an MCP tool result) a call reads and gives the model; default 1 MiB. */
  maxResponseBytes?: number;
  /** Where warnings go (an OpenAPI operation left out of the tools, and why); default process.emitWarning. */
  logger?: Pick<RuntimeLogger, "warn">;
  /**
   * How MCP sessions are held. "shared" (default): one client and session per connection in this
   * process, shared by every run (a stdio server: one process). "run": each run has a session of its
   * own (a stdio server: a process of its own), so what a stateful server keeps per session (a
   * browser page, a working directory, a transaction) never passes from one run to another; it is
   * ended once the run has not used it for `mcpSessionIdleMs`.
   */
  mcpSessions?: "shared" | "run";
  /** With mcpSessions "run": how long a run's MCP session may go unused before it is ended (a later call opens another); default 300 000 ms. */
  mcpSessionIdleMs?: number;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
const DEFAULT_MCP_SESSION_IDLE_MS = 5 * 60_000;

/** What `describe` persists per kind: JSON, no secrets. */
type ConnectionRecord =
  | { kind: "mcp"; description: string; tools: McpToolRecord[] }
  | { kind: "openapi"; description: string; api: OpenApiRecord }
  | { kind: "http"; description: string; api: HttpRecord };

/**
 * The connections plugin's provider for `RuntimeOptions.connections`: MCP
 * (Streamable HTTP and stdio, through @modelcontextprotocol/sdk), OpenAPI 3
 * and plain HTTP services as deferred tools named `<connection>__<tool>`,
 * every request through the one outbound address guard.
 */
export function createConnections(options: ConnectionsOptions = {}): ConnectionProvider {
  // Unknown keys and names that are not snake_case are refused by config.schema.json; each definition's shape below.
  checkConnectionsOptions(options);
  if (options.mcpSessionIdleMs !== undefined && options.mcpSessions !== "run") {
    throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `createConnections: mcpSessionIdleMs applies only to sessions of each run's own, but mcpSessions is ${JSON.stringify(options.mcpSessions ?? "shared")}`, {
      fix: 'Set mcpSessions: "run" with it, or leave mcpSessionIdleMs out (a shared session lasts until the host shuts down).',
    });
  }
  const connections = options.connections ?? {};
  for (const [name, definition] of Object.entries(connections)) checkDefinition(name, definition);
  const outbound = { grants: options.grants, ...(options.resolve ? { resolve: options.resolve } : {}) };
  const timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const mcp = new McpClients(outbound, timeoutMs, maxResponseBytes, { perRun: options.mcpSessions === "run", idleMs: options.mcpSessionIdleMs ?? DEFAULT_MCP_SESSION_IDLE_MS });
  const warn = (fields: Record<string, unknown>, message: string) => {
    if (options.logger) options.logger.warn(fields, message);
    else process.emitWarning(message, { type: "AssemblyLineWarning" });
  };

  const mcpTarget = (definition: AnyDefinition): McpTarget => {
    // A run's spec is a remote server whatever it carries: only a host's definition starts a local command.
    if (!isDynamicSpec(definition) && definition.kind === "mcp" && definition.command) {
      return { command: definition.command, ...(definition.args ? { args: definition.args } : {}), ...(definition.env ? { env: definition.env } : {}) };
    }
    return { url: (definition as { url: string }).url, ...(definition.auth ? { auth: definition.auth } : {}) };
  };

  /**
   * What a result or error of `definition` must not show: its grant's secret as stored now and
   * each secret its requests were sent with (`sent`: the grant may have been rotated meanwhile),
   * and the env values a host's stdio server was given.
   */
  const redactionOf = async (definition: AnyDefinition, sent: SentSecrets): Promise<SecretRedaction | undefined> => {
    const target = definition.kind === "mcp" ? mcpTarget(definition) : undefined;
    return combineRedactions(await redactionFor(definition.auth, options.grants, sent.values()), target && "command" in target ? envRedaction(target.env) : undefined);
  };

  /** `url`'s host resolved and each address classified now, as the guard would at a call (refuseSpecialAddresses). */
  const refuseAddressesOf = (name: string, url: string, policy: ConnectionPolicy): Promise<void> =>
    refuseSpecialAddresses(url, policy, outbound).catch((error: unknown) => {
      throw failure(name, "resolving its host", error);
    });

  return {
    connections,
    async describe(name, definition, policy): Promise<JsonValue> {
      // connections/<name>.ts definitions and a run's specs reach the provider here, not through createConnections.
      checkDefinition(name, definition);
      const description = definition.description ?? "";
      const sent = new SentSecrets();
      let record: ConnectionRecord;
      try {
        if (definition.kind === "mcp") {
          record = { kind: "mcp", description, tools: await mcp.describe(name, mcpTarget(definition), policy, sent) };
        } else if (definition.kind === "openapi") {
          const fetchFn = connectionFetch(name, policy, documentAuth(definition), outbound, sent);
          const current = await redactionFor(definition.auth, options.grants);
          const api = await describeOpenApi(name, definition.spec, definition.baseUrl, fetchFn, timeoutMs, (operation, reason) => {
            // A document may quote what it was fetched with: its text never reaches the logs unredacted.
            const redaction = combineRedactions(current, grantRedaction(definition.auth, sent.values()));
            const [shownOperation, shownReason] = [redactValue(operation, redaction), redactValue(reason, redaction)];
            warn({ event: "connection.operation_omitted", connection: name, operation: shownOperation }, `connection "${name}": OpenAPI operation ${shownOperation} is not offered as a tool: ${shownReason}`);
          });
          // The calls go to baseUrl (or the document's server), whose host the document's fetch never reached: checked as an http connection's is.
          if (typeof definition.spec !== "string" || !sameHost(api.baseUrl, definition.spec)) await refuseAddressesOf(name, api.baseUrl, policy);
          record = { kind: "openapi", description, api };
        } else {
          const api = describeHttp(name, definition.baseUrl, definition.endpoints);
          // Nothing is fetched to describe it: its host's addresses are checked here, not first at a call.
          await refuseAddressesOf(name, definition.baseUrl, policy);
          record = { kind: "http", description, api };
        }
      } catch (error) {
        throw redactError(error, await redactionOf(definition, sent));
      }
      // The record is persisted (settings facet) and shown to the model: no secret a service echoed into it.
      return redactValue(record, await redactionOf(definition, sent)) as unknown as JsonValue;
    },
    tools(name, definition, stored, policy): Record<string, ToolDefinition<any, any>> {
      const record = readableRecord(name, definition.kind, stored);
      const approval = (tool: string, description: string) => approves(isDynamicSpec(definition) ? undefined : definition.approval, name, tool, description);
      const tools: Record<string, ToolDefinition<any, any>> = {};
      const add = (tool: string, description: string, inputSchema: Record<string, unknown>, execute: (input: Record<string, unknown>, ctx: { runId: string; signal: AbortSignal; idempotencyKey(scope: string): string }, sent: SentSecrets) => Promise<JsonValue>) => {
        tools[`${name}__${tool}`] = defineTool({
          description: `${description} (${record.kind} connection ${name}${record.description ? `: ${record.description}` : ""})`,
          inputSchema,
          sideEffect: "external",
          needsApproval: approval(tool, description),
          capability: { visibility: "deferred", namespace: name, tags: ["connection", record.kind] },
          execute: async (input, ctx) => {
            const sent = new SentSecrets();
            try {
              const result = await execute((input ?? {}) as Record<string, unknown>, ctx, sent);
              return redactValue(result, await redactionOf(definition, sent));
            } catch (error) {
              // Closed under the call (host shutdown): thrown, so the runtime leaves the call open for the next start instead of recording a failure.
              if (isClosedUnder(error)) throw error;
              // Refusals and unreachable services are results the model can act on; the run goes on.
              const failed = redactError(failure(name, `calling ${tool}`, error), await redactionOf(definition, sent)) as Error & { code?: string };
              return { error: failed.message.split("\n")[0]!, ...(failed.code ? { code: failed.code } : {}) };
            }
          },
        });
      };
      if (record.kind === "mcp") {
        const target = mcpTarget(definition);
        for (const tool of record.tools) {
          add(tool.name, tool.description, tool.inputSchema, async (input, ctx, sent) => {
            return mcp.call(name, target, policy, tool.tool, input, { signal: ctx.signal, idempotencyKey: ctx.idempotencyKey(`${name}__${tool.name}`), runId: ctx.runId, sent });
          });
        }
      } else {
        // One guard (and its connection pool) per connection; the credentials are attached per call, to know which were sent.
        const guarded = guardedFetchFor(policy, outbound, definition.auth);
        for (const tool of record.api.tools) {
          add(tool.name, tool.description, tool.inputSchema, async (input, ctx, sent) => {
            const fetchFn = withGrant(name, policy, definition.auth, outbound.grants, guarded, sent);
            const request = record.kind === "openapi" ? openApiRequest(record.api, tool as OpenApiRecord["tools"][number], input) : httpRequest(record.api, tool, input);
            if ("error" in request) return { error: request.error };
            const prepared = { method: tool.method, ...request, headers: { ...request.headers, "idempotency-key": ctx.idempotencyKey(`${name}__${tool.name}`) } };
            return withTimeout(name, `calling ${tool.name}`, timeoutMs, ctx.signal, (signal) => send(fetchFn, prepared, signal, maxResponseBytes));
          });
        }
      }
      return tools;
    },
    async release(name, definition, policy): Promise<void> {
      // OpenAPI and HTTP tools hold only their guard's pool, whose idle sockets close themselves (undici's keep-alive timeout).
      if (definition.kind === "mcp") await mcp.release(name, mcpTarget(definition), policy);
    },
    close: () => mcp.close(),
  };
}

/**
 * What `describe` stored for a connection, checked before tools are made from it: a run's is read
 * back from the settings facet, where a row written by an older release or edited by hand may lack
 * what a tool needs. Throws AL_ERR_STATE_ROW_INVALID naming the connection and what is missing.
 */
function readableRecord(name: string, kind: ConnectionRecord["kind"], stored: JsonValue): ConnectionRecord {
  const problem = recordProblem(kind, stored);
  if (problem === undefined) return stored as unknown as ConnectionRecord;
  throw new AssemblyLineError("AL_ERR_STATE_ROW_INVALID", `connection "${name}": its stored description cannot be read: ${problem}`, {
    fix: "Remove the connection (ctx.connectionManager.remove) and add it again, which describes the service anew.",
  });
}

function recordProblem(kind: ConnectionRecord["kind"], stored: JsonValue): string | undefined {
  const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
  if (!isObject(stored)) return "it is not an object";
  if (stored.kind !== kind) return `its kind is ${JSON.stringify(stored.kind ?? null)}, not ${kind}`;
  if (kind !== "mcp" && !(isObject(stored.api) && typeof stored.api.baseUrl === "string")) return "api.baseUrl is missing";
  const field = kind === "mcp" ? "tools" : "api.tools";
  const tools = kind === "mcp" ? stored.tools : (stored.api as Record<string, unknown>).tools;
  if (!Array.isArray(tools)) return `${field} is not a list`;
  const own = kind === "mcp" ? ["tool"] : kind === "openapi" ? ["method", "path", "parameters"] : ["method", "path"];
  for (const [index, tool] of tools.entries()) {
    if (!isObject(tool)) return `${field}[${index}] is not an object`;
    const missing = ["name", "description", "inputSchema", ...own].find((key) => (key === "inputSchema" ? !isObject(tool[key]) : key === "parameters" ? !Array.isArray(tool[key]) : typeof tool[key] !== "string"));
    if (missing !== undefined) return `${field}[${index}].${missing} is missing or not a ${missing === "inputSchema" ? "schema" : missing === "parameters" ? "list" : "string"}`;
  }
  return undefined;
}

/**
 * The credentials an OpenAPI document is fetched with: the connection's when the document is on
 * the origin its calls go to (or no baseUrl is given: the document names the API), else none, so a
 * document kept on a docs site or CDN never receives the API's secret.
 */
function documentAuth(definition: { spec: unknown; baseUrl?: string | undefined; auth?: ConnectionAuth | undefined }): ConnectionAuth | undefined {
  if (typeof definition.spec !== "string" || definition.baseUrl === undefined || definition.auth === undefined) return definition.auth;
  return URL.canParse(definition.spec) && URL.canParse(definition.baseUrl) && new URL(definition.spec).origin === new URL(definition.baseUrl).origin ? definition.auth : undefined;
}

/** Whether two URLs name the same host. */
function sameHost(url: string, other: string): boolean {
  return URL.canParse(url) && URL.canParse(other) && new URL(url).hostname === new URL(other).hostname;
}

function httpRequest(api: HttpRecord, tool: HttpRecord["tools"][number], input: Record<string, unknown>): { url: string; headers: Record<string, string>; body?: RequestBody } | { error: string } {
  const path = fillPath(tool.path, input);
  if (typeof path !== "string") return path;
  const query = new URLSearchParams((input.query ?? {}) as Record<string, string>).toString();
  if (input.body !== undefined && tool.hasBody === false) return { error: `${tool.name} takes no body (${tool.method} ${tool.path}); call it without body` };
  return { url: `${api.baseUrl}${path}${query ? `?${query}` : ""}`, headers: {}, ...(input.body !== undefined ? { body: jsonBody(input.body) } : {}) };
}

function approves(approval: ConnectionApproval | undefined, connection: string, tool: string, description: string): boolean {
  if (typeof approval === "function") return approval({ connection, tool, description }) === true;
  return approval === true;
}

export type { ConnectionPolicy };
