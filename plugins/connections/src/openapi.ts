import { AssemblyLineError, type JsonValue } from "@assemblyline-agents/core";
import { jsonBody, pathSegment, withTimeout, type RequestBody } from "./http-request.js";
import { failure } from "./mcp.js";
import { acyclic, plainSchema, uniqueNames } from "./tool-names.js";
import { readBounded } from "./response-limit.js";

const METHODS = ["get", "put", "post", "delete", "patch"] as const;

/** One operation of an OpenAPI document as a tool, as described once and persisted. */
export interface OpenApiToolRecord {
  name: string;
  method: string;
  path: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** Where each input property goes, and how an array or object is written there (OpenAPI `style`, `explode`; absent: the defaults). */
  parameters: Array<{ name: string; in: "path" | "query" | "header" | "cookie"; style?: string; explode?: boolean }>;
  hasBody: boolean;
  /** The media type `body` is sent as (absent: application/json), and for a form how each field is written. */
  body?: { mediaType: string; encoding?: Record<string, { style?: string; explode?: boolean }> };
}

export interface OpenApiRecord {
  baseUrl: string;
  tools: OpenApiToolRecord[];
}

type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: Array<{ name: string; in: string; required?: boolean; description?: string; schema?: unknown; style?: string; explode?: boolean }>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: unknown; encoding?: Record<string, { style?: string; explode?: boolean }> }> };
};

const FORM = "application/x-www-form-urlencoded";
/** Header parameters OpenAPI 3 says to ignore: the request's own headers decide them (and the grant's, Authorization). */
const IGNORED_HEADERS = new Set(["accept", "content-type", "authorization"]);

/**
 * The most of an OpenAPI document fetched by URL that is read: large public
 * ones run to tens of MB (a service that never stops sending is cut off here).
 */
const MAX_DOCUMENT_BYTES = 64 * 1024 * 1024;

/**
 * Read an OpenAPI 3 document (fetched through the connection's guarded fetch
 * when `spec` is a URL), validate and dereference it with swagger-parser
 * (external `$ref`s are not followed: they would be requests outside the
 * guard), and turn each operation into a tool whose input schema is its
 * parameters plus `body`.
 */
export async function describeOpenApi(
  connection: string,
  spec: string | Record<string, unknown>,
  baseUrl: string | undefined,
  fetchFn: typeof fetch,
  timeoutMs: number,
  /** Told once per operation left out of the tools, with why. */
  warn: (operation: string, reason: string) => void,
): Promise<OpenApiRecord> {
  let document: Record<string, unknown>;
  if (typeof spec === "string") {
    const doing = `fetching its OpenAPI document ${spec}`;
    let text: string;
    try {
      text = await withTimeout(connection, doing, timeoutMs, undefined, async (signal) => {
        const response = await fetchFn(spec, { headers: { accept: "application/json, application/yaml;q=0.9, */*;q=0.8" }, signal });
        if (!response.ok) {
          await response.body?.cancel();
          throw new Error(`HTTP ${response.status}`);
        }
        const body = await readBounded(response, MAX_DOCUMENT_BYTES);
        if (body === undefined) throw new Error(`the document is larger than ${MAX_DOCUMENT_BYTES / (1024 * 1024)} MiB; give it inline (spec: the parsed document) if it is this large`);
        return body;
      });
    } catch (error) {
      throw failure(connection, doing, error);
    }
    try {
      document = await parseDocument(spec, text);
    } catch (error) {
      throw failure(connection, "reading its OpenAPI document (JSON or YAML expected)", error);
    }
  } else {
    document = structuredClone(spec);
  }
  if (typeof document.openapi !== "string" || !document.openapi.startsWith("3.")) {
    throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `connection "${connection}": the document is not OpenAPI 3 (openapi: ${JSON.stringify(document.openapi)})`, {
      fix: "Point spec at an OpenAPI 3.x document (Swagger 2 is not read).",
    });
  }
  const { default: SwaggerParser } = await import("@apidevtools/swagger-parser");
  let api: { servers?: Array<{ url: string; variables?: Record<string, { default?: unknown }> }>; paths?: Record<string, Record<string, Operation>> };
  try {
    api = (await SwaggerParser.validate(document as never, { resolve: { external: false } } as never)) as unknown as typeof api;
  } catch (error) {
    throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `connection "${connection}": the OpenAPI document is invalid: ${(error as Error).message}`, {
      fix: "Fix the document (swagger-parser validates it), or point spec at a valid one.",
    });
  }
  const resolvedBase = serverUrl(connection, baseUrl, api.servers?.[0], typeof spec === "string" ? spec : undefined);
  const operations: Array<{ method: string; path: string; operation: Operation }> = [];
  for (const [path, item] of Object.entries(api.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation) operations.push({ method, path, operation: { ...operation, parameters: [...((item as { parameters?: Operation["parameters"] }).parameters ?? []), ...(operation.parameters ?? [])] } });
    }
  }
  // An operation whose required body no supported media type can carry would be a tool that always fails: it is left out, said once.
  const callable = operations.filter(({ method, path, operation }) => {
    const content = operation.requestBody?.content ?? {};
    if (!operation.requestBody?.required || Object.keys(content).length === 0 || bodyMedia(content)) return true;
    warn(operation.operationId ?? `${method.toUpperCase()} ${path}`, `its request body is required and only comes as ${Object.keys(content).join(", ")}; tools send application/json or ${FORM}`);
    return false;
  });
  const names = uniqueNames(callable.map(({ method, path, operation }) => operation.operationId ?? `${method}_${path}`), connection);
  const tools = callable.map(({ method, path, operation }, index): OpenApiToolRecord => {
    const properties: Record<string, unknown> = {};
    const required: string[] = [];
    const parameters: OpenApiToolRecord["parameters"] = [];
    for (const parameter of operation.parameters ?? []) {
      if (parameter.in !== "path" && parameter.in !== "query" && parameter.in !== "header" && parameter.in !== "cookie") continue;
      if (parameter.in === "header" && IGNORED_HEADERS.has(parameter.name.toLowerCase())) continue;
      properties[parameter.name] = { ...plainSchema(acyclic(parameter.schema ?? { type: "string" })), ...(parameter.description ? { description: parameter.description } : {}) };
      if (parameter.required || parameter.in === "path") required.push(parameter.name);
      parameters.push({ name: parameter.name, in: parameter.in, ...(parameter.style ? { style: parameter.style } : {}), ...(typeof parameter.explode === "boolean" ? { explode: parameter.explode } : {}) });
    }
    const media = bodyMedia(operation.requestBody?.content ?? {});
    if (media) {
      properties.body = plainSchema(acyclic(media.schema ?? (media.mediaType === FORM ? { type: "object" } : {})));
      if (operation.requestBody?.required) required.push("body");
    }
    return {
      name: names[index]!,
      method: method.toUpperCase(),
      path,
      description: operation.summary ?? operation.description ?? `${method.toUpperCase()} ${path}`,
      inputSchema: { type: "object", properties, ...(required.length ? { required } : {}) },
      parameters,
      hasBody: Boolean(media),
      ...(media ? { body: { mediaType: media.mediaType, ...(media.encoding ? { encoding: media.encoding } : {}) } } : {}),
    };
  });
  return JSON.parse(JSON.stringify({ baseUrl: resolvedBase, tools })) as OpenApiRecord;
}

/**
 * A fetched document's text as an object: JSON, else YAML (services publish
 * openapi.yaml as often as openapi.json), read by swagger-parser's own parsers
 * from the text already fetched through the guard; nothing else is read.
 */
async function parseDocument(url: string, text: string): Promise<Record<string, unknown>> {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    const { default: SwaggerParser } = await import("@apidevtools/swagger-parser");
    const fetched = { order: 1, canRead: true, read: () => text };
    const options = { resolve: { external: false, file: false, http: false, fetched }, parse: { text: false, binary: false } };
    return (await SwaggerParser.parse(url, options as never)) as unknown as Record<string, unknown>;
  }
}

/** The request an OpenAPI tool call makes. */
export function openApiRequest(record: OpenApiRecord, tool: OpenApiToolRecord, input: Record<string, unknown>): { url: string; headers: Record<string, string>; body?: RequestBody } | { error: string } {
  let path = tool.path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (const parameter of tool.parameters) {
    const value = input[parameter.name];
    if (parameter.in === "path") {
      if (value === undefined || value === null || value === "") return { error: `path parameter "${parameter.name}" is required` };
      const segment = pathSegment(parameter.name, simpleStyle(value, parameter.explode === true));
      if (typeof segment !== "string") return segment;
      path = path.replace(`{${parameter.name}}`, segment);
    } else if (value !== undefined && value !== null) {
      if (parameter.in === "query") appendQuery(query, parameter, value);
      else if (parameter.in === "cookie") cookies.push(`${parameter.name}=${cookieValue(value)}`);
      else headers[parameter.name] = simpleStyle(value, parameter.explode === true);
    }
  }
  if (cookies.length) headers.cookie = cookies.join("; ");
  const search = query.toString();
  const url = `${record.baseUrl}${path}${search ? `?${search}` : ""}`;
  if (!tool.hasBody || input.body === undefined) return { url, headers };
  const mediaType = tool.body?.mediaType ?? "application/json";
  if (mediaType !== FORM) return { url, headers, body: jsonBody(input.body, mediaType) };
  if (typeof input.body !== "object" || input.body === null || Array.isArray(input.body)) return { error: `body of ${tool.name} must be an object: its fields are sent as a form (${FORM})` };
  const form = new URLSearchParams();
  for (const [field, value] of Object.entries(input.body)) {
    if (value !== undefined && value !== null) appendQuery(form, { name: field, ...tool.body?.encoding?.[field] }, value);
  }
  return { url, headers, body: { contentType: FORM, text: form.toString() } };
}

/**
 * The media type a body is sent as: JSON (`application/json`, any `+json`, or
 * a wildcard that admits it) before an HTML form; undefined when the operation
 * takes neither (multipart, octet-stream, XML, text).
 */
function bodyMedia(content: NonNullable<Operation["requestBody"]>["content"] & object): { mediaType: string; schema?: unknown; encoding?: Record<string, { style?: string; explode?: boolean }> } | undefined {
  const entries = Object.entries(content).map(([key, media]) => ({ key, type: key.split(";")[0]!.trim().toLowerCase(), media }));
  const json = entries.find(({ type }) => type === "application/json" || /^application\/[^/]+\+json$/.test(type) || type === "*/*" || type === "application/*");
  if (json) return { mediaType: json.type.includes("*") ? "application/json" : json.key, schema: json.media?.schema };
  const form = entries.find(({ type }) => type === FORM);
  if (form) return { mediaType: FORM, schema: form.media?.schema, ...(form.media?.encoding ? { encoding: form.media.encoding } : {}) };
  return undefined;
}

/** A cookie parameter's value (OpenAPI `form`, not exploded): percent-encoded, as RFC 6265 allows no `;`, `,` or spaces in it; items joined by commas. */
function cookieValue(value: unknown): string {
  const text = (item: unknown) => encodeURIComponent(typeof item === "object" && item !== null ? JSON.stringify(item) : String(item));
  if (Array.isArray(value)) return value.map(text).join(",");
  if (typeof value === "object" && value !== null) return Object.entries(value).flatMap(([key, item]) => [text(key), text(item)]).join(",");
  return text(value);
}

/**
 * Where requests go: baseUrl, else the document's first server with its
 * variables at their defaults, resolved against the document's own URL (a
 * document without servers is served from "/", as OpenAPI 3 says).
 */
function serverUrl(connection: string, baseUrl: string | undefined, server: { url: string; variables?: Record<string, { default?: unknown }> } | undefined, documentUrl: string | undefined): string {
  if (baseUrl) return baseUrl.replace(/\/$/, "");
  const template = server?.url ?? "/";
  const url = template.replace(/\{([^}]+)\}/g, (whole, name: string) => {
    const value = server?.variables?.[name]?.default;
    return value === undefined ? whole : String(value);
  });
  let resolved: URL;
  try {
    resolved = new URL(url, documentUrl);
  } catch {
    throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `connection "${connection}": the document's server ${JSON.stringify(template)} is not an absolute URL${documentUrl ? "" : " and the document was given inline, so there is no URL to resolve it against"}`, {
      fix: 'Pass baseUrl: "https://api.example.com/v1".',
    });
  }
  if (/\{[^}]+\}/.test(decodeURI(resolved.toString()))) {
    throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `connection "${connection}": the document's server ${JSON.stringify(template)} has a variable without a default`, { fix: "Give the variable a default in the document, or pass baseUrl." });
  }
  return resolved.toString().replace(/\/$/, "");
}

/** OpenAPI's `simple` style (path and header parameters): arrays and objects as comma-separated lists. */
function simpleStyle(value: unknown, explode: boolean): string {
  if (Array.isArray(value)) return value.map(String).join(",");
  if (typeof value === "object" && value !== null) return Object.entries(value).map(([key, item]) => (explode ? `${key}=${String(item)}` : `${key},${String(item)}`)).join(",");
  return String(value);
}

/** A query parameter (or a form field) in its OpenAPI style: `form` (default; explode: ids=1&ids=2), `spaceDelimited`, `pipeDelimited`, `deepObject` (filter[sky]=clear). */
function appendQuery(query: URLSearchParams, parameter: { name: string; style?: string; explode?: boolean }, value: unknown): void {
  const style = parameter.style ?? "form";
  const explode = parameter.explode ?? style === "form";
  const text = (item: unknown) => (typeof item === "string" ? item : typeof item === "object" && item !== null ? JSON.stringify(item) : String(item));
  if (Array.isArray(value)) {
    if (explode) for (const item of value) query.append(parameter.name, text(item));
    else query.append(parameter.name, value.map(text).join(style === "spaceDelimited" ? " " : style === "pipeDelimited" ? "|" : ","));
  } else if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value);
    if (style === "deepObject") for (const [key, item] of entries) query.append(`${parameter.name}[${key}]`, text(item));
    else if (explode) for (const [key, item] of entries) query.append(key, text(item));
    else query.append(parameter.name, entries.flatMap(([key, item]) => [key, text(item)]).join(","));
  } else {
    query.append(parameter.name, text(value));
  }
}

export type { JsonValue };
