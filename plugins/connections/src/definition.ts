import { AssemblyLineError, credentialInUrl, isConnectionDefinition, quotedUrl, type ConnectionDefinition, type DynamicConnectionSpec } from "@assemblyline-agents/core";
import { describeHttp } from "./http.js";
import { serverUrl } from "./openapi.js";
import { connectionNameTooLong, MAX_CONNECTION_NAME_LENGTH } from "./tool-names.js";

export type AnyDefinition = ConnectionDefinition | DynamicConnectionSpec;

const COMMON = ["description", "auth", "approval"];
/** The fields each helper reads (plus the brand and kind); anything else would be silently ignored, so it is refused. */
const STATIC_FIELDS: Record<ConnectionDefinition["kind"], readonly string[]> = {
  mcp: [...COMMON, "url", "command", "args", "env"],
  openapi: [...COMMON, "spec", "baseUrl"],
  http: [...COMMON, "baseUrl", "endpoints"],
};
const BRAND_FIELDS = ["kind", "$$type", "$$version"];
/** A run's `ctx.connectionManager.add` spec: remote services only, never a local command, never an approval of its own. */
const DYNAMIC_FIELDS: Record<DynamicConnectionSpec["kind"], readonly string[]> = {
  mcp: ["name", "kind", "description", "auth", "url"],
  openapi: ["name", "kind", "description", "auth", "spec", "baseUrl"],
  http: ["name", "kind", "description", "auth", "baseUrl", "endpoints"],
};
const AUTH_FIELDS = ["grant", "header", "query"];
// RFC 9110 token: what a header name may be.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * A run's spec, as opposed to a host's definition. Specs are JSON a model wrote,
 * so a brand is no proof: only a definition without `name` (which every spec
 * carries, and which no helper accepts) is the host's.
 */
export function isDynamicSpec(definition: AnyDefinition): definition is DynamicConnectionSpec {
  return !isConnectionDefinition(definition) || "name" in (definition as object);
}

/**
 * Check a definition before anything is fetched or started: every field a
 * known one of its kind (an unknown field would be silently ignored), URLs
 * absolute http(s), and a run's spec limited to remote services. Throws
 * AL_ERR_CONNECTION_DEFINITION naming the connection and the field.
 */
export function checkDefinition(name: string, definition: AnyDefinition): void {
  const fail = (problem: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `connection "${name}": ${problem}`, { fix });
  };
  // Its tools are <name>__<tool>: a name that leaves no room for a tool's own would make every tool one no model API accepts.
  if (name.length > MAX_CONNECTION_NAME_LENGTH) throw connectionNameTooLong(name);
  if (typeof definition !== "object" || definition === null) fail("is not an object", "Declare it with defineMcpConnection / defineOpenApiConnection / defineHttpConnection from @assemblyline-agents/core.");
  const dynamic = isDynamicSpec(definition);
  const kind = (definition as { kind?: unknown }).kind;
  if (kind !== "mcp" && kind !== "openapi" && kind !== "http") {
    if (dynamic) fail(`kind ${JSON.stringify(kind)} is not mcp, openapi or http`, 'Pass kind "mcp" (url), "openapi" (spec) or "http" (baseUrl, endpoints).');
    fail("is not a defineMcpConnection / defineOpenApiConnection / defineHttpConnection result", "Declare it with one of those helpers from @assemblyline-agents/core.");
  }
  const known = dynamic ? DYNAMIC_FIELDS[kind as DynamicConnectionSpec["kind"]] : [...STATIC_FIELDS[kind as ConnectionDefinition["kind"]], ...BRAND_FIELDS];
  const unknown = Object.keys(definition).filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    const local = dynamic && unknown.some((key) => key === "command" || key === "args" || key === "env");
    fail(
      `${unknown.map((key) => JSON.stringify(key)).join(", ")} ${unknown.length === 1 ? "is not a field" : "are not fields"} of ${dynamic ? "a run's" : "an"} ${kind} connection${local ? " (a run may only add remote services, never start a local command)" : ""}`,
      `Use only ${known.filter((key) => !BRAND_FIELDS.includes(key) || key === "kind").join(", ")}.`,
    );
  }
  const description = (definition as { description?: unknown }).description;
  if (dynamic ? description !== undefined && typeof description !== "string" : typeof description !== "string" || description.trim() === "") {
    fail("description is required (a non-empty string)", "Say what the service offers; tool_search shows it.");
  }
  checkAuth((definition as { auth?: unknown }).auth, fail);
  const approval = (definition as { approval?: unknown }).approval;
  if (approval !== undefined && typeof approval !== "boolean" && typeof approval !== "function") fail(`approval ${JSON.stringify(approval)} is not true, false or a function`, "Pass approval: true, or ({ tool }) => tool === \"delete_item\".");

  const spec = definition as unknown as Record<string, unknown>;
  if (kind === "mcp") {
    const hasUrl = spec.url !== undefined;
    const hasCommand = spec.command !== undefined;
    if (hasUrl === hasCommand) fail("give exactly one of url (Streamable HTTP) or command (stdio)", 'defineMcpConnection({ url: "https://mcp.example.com/mcp", description })');
    if (hasUrl) {
      checkUrl("url", spec.url, fail);
      for (const field of ["args", "env"]) if (spec[field] !== undefined) fail(`${field} only applies to a stdio server (command), not to url`, `Drop ${field}, or start the server with command.`);
    } else {
      if (typeof spec.command !== "string" || spec.command.trim() === "") fail("command must be a non-empty string", 'defineMcpConnection({ command: "node", args: ["server.mjs"], description })');
      if (spec.args !== undefined && (!Array.isArray(spec.args) || spec.args.some((arg) => typeof arg !== "string"))) fail("args must be an array of strings", 'Pass args: ["server.mjs", "--port", "0"].');
      if (spec.env !== undefined && (typeof spec.env !== "object" || spec.env === null || Array.isArray(spec.env) || Object.values(spec.env).some((value) => typeof value !== "string"))) {
        fail("env must be an object of strings", 'Pass env: { API_KEY: process.env.API_KEY! }.');
      }
      // stdio has no HTTP request to put a grant's secret on; the server reads its credentials from env.
      if (spec.auth !== undefined) fail("auth only applies to a url (Streamable HTTP) server, not to a stdio command", "Give the stdio server its credentials through env.");
    }
  } else if (kind === "openapi") {
    if (typeof spec.spec === "string") checkUrl("spec", spec.spec, fail);
    else if (dynamic || typeof spec.spec !== "object" || spec.spec === null || Array.isArray(spec.spec)) {
      fail(dynamic ? "spec must be the URL of an OpenAPI document" : "spec must be a URL or an OpenAPI document", 'Pass spec: "https://api.example.com/openapi.json".');
    }
    if (spec.baseUrl !== undefined) checkBaseUrl(spec.baseUrl, fail);
    // Without baseUrl an inline document's first server is where the calls go: one that is no absolute URL once its variables are filled in is refused now, not at the first describe.
    else if (typeof spec.spec === "object" && spec.spec !== null) {
      const servers = (spec.spec as { servers?: unknown }).servers;
      const first: unknown = Array.isArray(servers) ? servers[0] : undefined;
      // A server that is no { url } is the document's validation's to refuse.
      if (first === undefined || (typeof first === "object" && first !== null && typeof (first as { url?: unknown }).url === "string")) serverUrl(name, undefined, first as { url: string } | undefined, undefined);
    }
  } else {
    checkBaseUrl(spec.baseUrl, fail);
    describeHttp(name, spec.baseUrl as string, spec.endpoints as never);
  }
}

function checkUrl(field: string, value: unknown, fail: (problem: string, fix: string) => never): void {
  let url: URL | undefined;
  try {
    url = typeof value === "string" ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "https:" && url.protocol !== "http:")) fail(`${field} ${quotedUrl(value)} is not an absolute http(s) URL`, `Pass ${field}: "https://service.example.com/...".`);
  // A secret in the URL would be written to events, logs and the settings store wherever the URL is.
  if (url!.username || url!.password) fail(`${field} carries credentials in the URL`, 'Store the secret in the grant store and refer to it with auth: { grant: "<id>" }.');
  const credential = credentialInUrl(url!);
  if (credential) {
    fail(
      `${field} carries a credential in its ${credential.in === "query" ? "query string" : "fragment"} (parameter ${JSON.stringify(credential.parameter)})`,
      `Store the secret in the grant store and send it as that parameter: auth: { grant: "<id>", query: ${JSON.stringify(credential.parameter)} }, with the parameter taken out of ${field}.`,
    );
  }
}

/**
 * A baseUrl is checked as any URL, and has no query or fragment: each tool's path is written after
 * it, so `https://api.example.com/v1?version=2` would send `/items/7` inside the query string.
 */
function checkBaseUrl(value: unknown, fail: (problem: string, fix: string) => never): void {
  checkUrl("baseUrl", value, fail);
  const text = value as string;
  const part = text.includes("?") ? "query string" : text.includes("#") ? "fragment" : undefined;
  if (part) {
    fail(
      `baseUrl ${quotedUrl(value)} has a ${part}; each tool's path is written after baseUrl, so it would end up inside the ${part} instead of the URL's path`,
      'Give baseUrl as scheme, host and path only ("https://api.example.com/v1"); a key the service takes in the query is auth: { grant: "<id>", query: "<param>" }, and a tool\'s query parameters are its own inputs.',
    );
  }
}

function checkAuth(auth: unknown, fail: (problem: string, fix: string) => never): void {
  if (auth === undefined) return;
  const fix = 'Refer to a grant in the host\'s grant store, auth: { grant: "github" } (header: "x-api-key" to send it in a header of its own, or query: "api_key" as a query parameter); never put the secret here.';
  if (typeof auth !== "object" || auth === null || Array.isArray(auth)) fail('auth must be { grant: "<id>" }', fix);
  const record = auth as Record<string, unknown>;
  const unknown = Object.keys(record).filter((key) => !AUTH_FIELDS.includes(key));
  if (unknown.length > 0) fail(`auth.${unknown[0]} is not a field of auth (grant, header, query)`, fix);
  if (typeof record.grant !== "string" || record.grant === "") fail("auth.grant must be a grant id", fix);
  if (record.header !== undefined && (typeof record.header !== "string" || !HEADER_NAME.test(record.header))) fail(`auth.header ${JSON.stringify(record.header)} is not an HTTP header name`, fix);
  if (record.query !== undefined && (typeof record.query !== "string" || record.query === "")) fail(`auth.query ${JSON.stringify(record.query)} is not a query parameter name`, fix);
  // One secret, sent one way: which of the two the service reads is not for the runtime to guess.
  if (record.header !== undefined && record.query !== undefined) fail("auth.header and auth.query are both set; the secret is sent one way", 'Keep the one the service reads: auth: { grant, header: "x-api-key" } or auth: { grant, query: "api_key" }.');
}
