import { AssemblyLineError, openApiServerUrl, type JsonValue } from "@assemblyline-agents/core";
import { jsonBody, withTimeout, type RequestBody } from "./http-request.js";
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
      if (operation) operations.push({ method, path, operation: { ...operation, parameters: mergedParameters((item as { parameters?: Operation["parameters"] }).parameters, operation.parameters) } });
    }
  }
  // An operation a tool cannot express (see unexpressible) would be a tool that always fails or sends what the model did not mean: it is left out, said once.
  const callable = operations.filter(({ method, path, operation }) => {
    const reason = unexpressible(operation);
    if (reason !== undefined) warn(operation.operationId ?? `${method.toUpperCase()} ${path}`, reason);
    return reason === undefined;
  });
  const names = uniqueNames(callable.map(({ method, path, operation }) => operation.operationId ?? `${method}_${path}`), connection);
  const tools = callable.map(({ method, path, operation }, index): OpenApiToolRecord => {
    const properties: Record<string, unknown> = {};
    const required: string[] = [];
    const parameters: OpenApiToolRecord["parameters"] = [];
    for (const parameter of inputParameters(operation)) {
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
 * A path item's parameters with its operation's: an operation's parameter replaces the path
 * item's of the same name and location (OpenAPI 3: "can override ... but cannot remove"); header
 * names compared in any case.
 */
function mergedParameters(shared: Operation["parameters"], own: Operation["parameters"]): Operation["parameters"] {
  const key = (parameter: { name: string; in: string }) => `${parameter.in}:${parameter.in === "header" ? parameter.name.toLowerCase() : parameter.name}`;
  const overridden = new Set((own ?? []).map(key));
  return [...(shared ?? []).filter((parameter) => !overridden.has(key(parameter))), ...(own ?? [])];
}

/** The parameters that are inputs of the operation's tool: path, query, header and cookie ones, but for the headers the request sets itself. */
function inputParameters(operation: Operation): Array<NonNullable<Operation["parameters"]>[number] & { in: OpenApiToolRecord["parameters"][number]["in"] }> {
  return (operation.parameters ?? []).filter(
    (parameter): parameter is typeof parameter & { in: OpenApiToolRecord["parameters"][number]["in"] } => (parameter.in === "path" || parameter.in === "query" || parameter.in === "header" || parameter.in === "cookie") && !(parameter.in === "header" && IGNORED_HEADERS.has(parameter.name.toLowerCase())),
  );
}

/**
 * Why an operation cannot be a tool, or undefined when it can. A tool's input is one object whose
 * properties are the parameters by name, plus `body`; an operation is left out (not guessed at) when
 * - its request body is required and comes in no media type a tool sends (JSON or a form);
 * - two of its parameters share a name in different locations (a path `id` and a query `id`): one
 *   input could not carry both values, and a renamed one would be a name the document never gave;
 * - a parameter is named `body` beside a request body, which is the `body` input.
 */
function unexpressible(operation: Operation): string | undefined {
  const content = operation.requestBody?.content ?? {};
  const media = bodyMedia(content);
  if (operation.requestBody?.required && Object.keys(content).length > 0 && !media) {
    return `its request body is required and only comes as ${Object.keys(content).join(", ")}; tools send application/json or ${FORM}`;
  }
  const locations = new Map<string, string[]>();
  for (const parameter of inputParameters(operation)) locations.set(parameter.name, [...(locations.get(parameter.name) ?? []), parameter.in]);
  for (const [name, where] of locations) {
    if (where.length > 1) return `its parameters ${where.map((location) => `${JSON.stringify(name)} in ${location}`).join(" and ")} share a name, and a tool takes each input by name once; give them different names in the document to offer it`;
  }
  const body = locations.get("body");
  if (media && body) return `its ${body[0]} parameter "body" has the name of the tool's body input (the request body); rename the parameter in the document to offer it`;
  return undefined;
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
      const segment = pathStyle(parameter, value);
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
export function serverUrl(connection: string, baseUrl: string | undefined, server: { url: string; variables?: Record<string, { default?: unknown }> } | undefined, documentUrl: string | undefined): string {
  if (baseUrl) return baseUrl.replace(/\/$/, "");
  const template = server?.url ?? "/";
  const url = openApiServerUrl({ ...server, url: template });
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
  // Each tool's path is written after it: in a query or fragment it would not be the URL's path.
  if (resolved.search !== "" || resolved.hash !== "" || /[?#]/.test(url)) {
    throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `connection "${connection}": the document's server ${JSON.stringify(template)} has a query string or fragment, after which no operation's path can be written`, {
      fix: 'Pass baseUrl: "https://api.example.com/v1" (scheme, host and path only).',
    });
  }
  return resolved.toString().replace(/\/$/, "");
}

/**
 * A path parameter in its OpenAPI style, each value percent-encoded and the style's own delimiters
 * not (RFC 6570): `simple` (default; 5, 3,4,5, role,admin or exploded role=admin), `label` (.5,
 * .3,4,5 or exploded .3.4.5, .role,admin or exploded .role=admin) and `matrix` (;id=5, ;id=3,4,5 or
 * exploded ;id=3;id=4, ;id=role,admin or exploded ;role=admin). A value that would be the segment
 * `.` or `..` is refused (see pathSegment).
 */
function pathStyle(parameter: { name: string; style?: string; explode?: boolean }, value: unknown): string | { error: string } {
  const style = parameter.style === "label" || parameter.style === "matrix" ? parameter.style : "simple";
  const explode = parameter.explode === true;
  const text = (item: unknown) => encodeURIComponent(typeof item === "object" && item !== null ? JSON.stringify(item) : String(item));
  const name = encodeURIComponent(parameter.name);
  // The value's parts: an array's items, an object's key-value pairs, or the one value.
  const pairs = typeof value === "object" && value !== null && !Array.isArray(value) ? Object.entries(value).map(([key, item]): [string, string] => [text(key), text(item)]) : undefined;
  const items = pairs ? undefined : Array.isArray(value) ? value.map(text) : [text(value)];
  let segment: string;
  if (style === "matrix") {
    if (pairs) segment = explode ? pairs.map(([key, item]) => `;${key}=${item}`).join("") : `;${name}=${pairs.flat().join(",")}`;
    else segment = explode ? items!.map((item) => `;${name}=${item}`).join("") : `;${name}=${items!.join(",")}`;
  } else {
    const separator = style === "label" && explode ? "." : ",";
    const parts = pairs ? (explode ? pairs.map(([key, item]) => `${key}=${item}`) : pairs.flat()) : items!;
    segment = `${style === "label" ? "." : ""}${parts.join(separator)}`;
  }
  if (segment === "." || segment === "..") return { error: `path parameter "${parameter.name}" is ${JSON.stringify(value)}, which would leave the operation's path; pass the id or name itself` };
  return segment;
}

/** OpenAPI's `simple` style (header parameters): arrays and objects as comma-separated lists. */
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
