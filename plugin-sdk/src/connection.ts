import { brand, hasBrand, type Branded } from "./brand.js";
import type { JsonSchema, JsonValue } from "./json.js";
import type { ToolDefinition } from "./tool.js";

/**
 * Credentials of a connection: the id of a grant in the host's grant store,
 * never the secret itself. The secret is added to each request by the
 * connections plugin and never reaches events, logs, tool inputs or the model.
 */
export interface ConnectionAuth {
  grant: string;
  /** How the secret is sent: `Authorization: Bearer <secret>` (default) or in a header of its own. */
  header?: string;
  /**
   * Or as this query parameter of each request (`?api_key=<secret>`), for a
   * service that takes its key only there; not together with `header`. Like a
   * header, it never follows a redirect to another origin.
   */
  query?: string;
}

/**
 * Query parameter names that carry a credential, as compared: lower case, no
 * `-` or `_` (`API_KEY`, `api-key` and `apiKey` are all `apikey`).
 */
const CREDENTIAL_PARAMETERS = new Set([
  "key", "apikey", "appkey", "accesskey", "secretkey", "privatekey", "subscriptionkey", "authkey", "licensekey",
  "token", "accesstoken", "refreshtoken", "idtoken", "authtoken", "apitoken", "privatetoken", "bearertoken", "bearer", "jwt",
  "auth", "authorization", "credential", "credentials",
  "secret", "clientsecret", "apisecret", "appsecret",
  "password", "passwd", "pwd",
  "sig", "signature",
  "session", "sessionid", "sessiontoken", "sid",
]);
/**
 * Endings that mark a credential whatever comes before (`github_token` does not: "token" alone is
 * also a page cursor's name, `pageToken`, `next_token`; nor does "key" alone: `monkey`).
 */
const CREDENTIAL_ENDINGS = ["apikey", "authkey", "licensekey", "accesstoken", "authtoken", "privatetoken", "bearertoken", "securitytoken", "sessiontoken", "secret", "password", "signature"];

/**
 * The first parameter of `url`'s query string (or fragment, `#access_token=`)
 * whose name says it carries a credential, with where it is; undefined if none.
 * Pairs are separated by `&` or `;` (`?a=1;api_key=...`, which some servers read).
 * A secret written into a URL is stored, logged and shown wherever the URL is,
 * so connections refuse such URLs and take the secret from a grant instead
 * (`auth: { grant, query }`).
 */
export function credentialInUrl(url: URL): { parameter: string; in: "query" | "fragment" } | undefined {
  for (const [part, text] of [["query", url.search], ["fragment", url.hash]] as const) {
    for (const pair of text.slice(1).split(/[&;]/)) {
      const parameter = [...new URLSearchParams(pair).keys()][0];
      if (parameter === undefined) continue;
      const compared = parameter.toLowerCase().replace(/[-_]/g, "");
      if (CREDENTIAL_PARAMETERS.has(compared) || CREDENTIAL_ENDINGS.some((ending) => compared.endsWith(ending))) return { parameter, in: part };
    }
  }
  return undefined;
}

/** Approval of a connection's tool calls: one answer for all, or per tool. */
export type ConnectionApproval = boolean | ((tool: { connection: string; tool: string; description: string }) => boolean);

interface ConnectionCommon {
  /** What the connection offers; tool_search shows it with each tool. */
  description: string;
  auth?: ConnectionAuth;
  approval?: ConnectionApproval;
}

export interface McpConnectionOptions extends ConnectionCommon {
  /** A Streamable HTTP endpoint... */
  url?: string;
  /** ...or a local server started over stdio (host-declared connections only). */
  command?: string;
  args?: string[];
  env?: Record<string, string>;
}

export interface OpenApiConnectionOptions extends ConnectionCommon {
  /** The OpenAPI 3 document: a URL, or the document itself. */
  spec: string | Record<string, unknown>;
  /** Where requests go; default the document's first server. */
  baseUrl?: string;
}

/**
 * An OpenAPI server's URL with each `{variable}` at its default (OpenAPI 3 gives every server
 * variable one): where its calls go (`http://{region}.api.example.com` -> `http://eu.api.example.com`),
 * and the host a host-declared connection may reach. A variable without a default is left as written.
 */
export function openApiServerUrl(server: { url: string; variables?: Record<string, { default?: unknown }> | undefined }): string {
  return server.url.replace(/\{([^}]+)\}/g, (whole, name: string) => {
    const value = server.variables?.[name]?.default;
    return value === undefined ? whole : String(value);
  });
}

export interface HttpEndpoint {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Path under baseUrl; `{name}` segments are filled from the input. */
  path: string;
  description: string;
  /** JSON Schema of the body (POST, PUT, PATCH or DELETE; a GET sends none). */
  body?: JsonSchema;
}

export interface HttpConnectionOptions extends ConnectionCommon {
  baseUrl: string;
  /** One tool per endpoint, named by its key (snake_case). */
  endpoints: Record<string, HttpEndpoint>;
}

export type ConnectionDefinition =
  | (McpConnectionOptions & { kind: "mcp" } & Branded<"assembly-line.connection">)
  | (OpenApiConnectionOptions & { kind: "openapi" } & Branded<"assembly-line.connection">)
  | (HttpConnectionOptions & { kind: "http" } & Branded<"assembly-line.connection">);

/** An MCP server (Streamable HTTP `url`, or stdio `command`) whose tools become `<connection>__<tool>`. */
export function defineMcpConnection(options: McpConnectionOptions): ConnectionDefinition {
  return brand("assembly-line.connection", { ...checked(options, "defineMcpConnection"), kind: "mcp" as const });
}

/** An OpenAPI 3 document: each operation becomes a tool `<connection>__<operation>`. */
export function defineOpenApiConnection(options: OpenApiConnectionOptions): ConnectionDefinition {
  return brand("assembly-line.connection", { ...checked(options, "defineOpenApiConnection"), kind: "openapi" as const });
}

/** Plain HTTP endpoints, one tool each. */
export function defineHttpConnection(options: HttpConnectionOptions): ConnectionDefinition {
  return brand("assembly-line.connection", { ...checked(options, "defineHttpConnection"), kind: "http" as const });
}

export function isConnectionDefinition(value: unknown): value is ConnectionDefinition {
  return hasBrand(value, "assembly-line.connection");
}

function checked<T extends object>(options: T, helper: string): T {
  if (typeof options !== "object" || options === null) throw new TypeError(`${helper}(options): options must be an object with at least a description`);
  return options;
}

/** What a run asks `ctx.connectionManager.add` for: remote services only (no stdio). */
export type DynamicConnectionSpec =
  | { name: string; kind: "mcp"; url: string; description?: string; auth?: ConnectionAuth }
  | { name: string; kind: "openapi"; spec: string; baseUrl?: string; description?: string; auth?: ConnectionAuth }
  | { name: string; kind: "http"; baseUrl: string; endpoints: Record<string, HttpEndpoint>; description?: string; auth?: ConnectionAuth };

export interface ConnectionInfo {
  name: string;
  kind: "mcp" | "openapi" | "http";
  source: "static" | "dynamic";
  description: string;
  /** Tool names as the model sees them (`<connection>__<tool>`). */
  tools: string[];
}

/**
 * `ctx.connectionManager`: present only when agent.ts sets
 * `dynamicConnections: { dynamic: true }`. `add` connects under the agent's
 * `allowedHosts`, lists the service's tools and persists the connection in the
 * state store, so every replica and every resume sees it; with `approval` on
 * (the default) it pauses the run for approval first.
 */
export interface ConnectionManager {
  add(spec: DynamicConnectionSpec): Promise<ConnectionInfo>;
  list(): Promise<ConnectionInfo[]>;
  remove(name: string): Promise<{ removed: boolean }>;
}

/** The policy a connection's requests are held to. */
export interface ConnectionPolicy {
  /** Hosts requests may go to; for dynamic connections the agent's dynamicConnections.allowedHosts. */
  allowedHosts: readonly string[];
  /** Refuse hosts outside allowedHosts: true for every connection (a host-declared one may reach the hosts its definition names). */
  onlyAllowedHosts: boolean;
  /**
   * The hosts the connection's grant may be sent to ("*.example.com" matches
   * subdomains); absent: any host the policy allows. Set for a run's connection
   * (agent.ts dynamicConnections.grants): a request to another host must fail
   * before the secret is attached.
   */
  grantHosts?: readonly string[];
}

/**
 * The runtime's side of a connections plugin (`@assemblyline-agents/connections`):
 * the kernel persists and replays, the plugin speaks MCP, OpenAPI and HTTP.
 */
export interface ConnectionProvider {
  /** Host-declared connections, by name. */
  readonly connections?: Record<string, ConnectionDefinition>;
  /**
   * Connect once and describe the service: a JSON record (no secrets) the
   * runtime persists for dynamic connections. Refusals (hosts, addresses,
   * grants) throw AssemblyLineErrors.
   */
  describe(name: string, definition: ConnectionDefinition | DynamicConnectionSpec, policy: ConnectionPolicy): Promise<JsonValue>;
  /**
   * The tools of a described connection, keyed `<connection>__<tool>`. Called
   * in every process that serves the connection (another replica, a resume),
   * with the definition and the persisted record, so no process needs to have
   * described it itself.
   */
  tools(name: string, definition: ConnectionDefinition | DynamicConnectionSpec, record: JsonValue, policy: ConnectionPolicy): Record<string, ToolDefinition<any, any>>;
  /**
   * This process no longer provides the connection (removed, or replaced by a
   * new definition): close what it holds for it. Called with the definition and
   * policy its tools were made with; calls still in flight must be let finish,
   * and a later use may connect again. A failure is logged, never thrown into a run.
   */
  release?(name: string, definition: ConnectionDefinition | DynamicConnectionSpec, policy: ConnectionPolicy): Promise<void>;
  /** Close clients and child processes (host shutdown); a use afterwards (a run the shutdown stopped waiting for) should fail rather than open a client nothing would close. */
  close?(): Promise<void>;
}

export function isConnectionProvider(value: unknown): value is ConnectionProvider {
  return typeof value === "object" && value !== null && typeof (value as ConnectionProvider).describe === "function" && typeof (value as ConnectionProvider).tools === "function";
}
