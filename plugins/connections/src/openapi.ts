import { AssemblyLineError, type JsonValue } from "@assemblyline-agents/core";
import { withTimeout } from "./http-request.js";
import { failure } from "./mcp.js";
import { acyclic, plainSchema, uniqueNames } from "./tool-names.js";

const METHODS = ["get", "put", "post", "delete", "patch"] as const;

/** One operation of an OpenAPI document as a tool, as described once and persisted. */
export interface OpenApiToolRecord {
  name: string;
  method: string;
  path: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** Where each input property goes, and how an array or object is written there (OpenAPI `style`, `explode`; absent: the defaults). */
  parameters: Array<{ name: string; in: "path" | "query" | "header"; style?: string; explode?: boolean }>;
  hasBody: boolean;
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
  requestBody?: { required?: boolean; content?: Record<string, { schema?: unknown }> };
};

/**
 * Read an OpenAPI 3 document (fetched through the connection's guarded fetch
 * when `spec` is a URL), validate and dereference it with swagger-parser
 * (external `$ref`s are not followed: they would be requests outside the
 * guard), and turn each operation into a tool whose input schema is its
 * parameters plus `body`.
 */
export async function describeOpenApi(connection: string, spec: string | Record<string, unknown>, baseUrl: string | undefined, fetchFn: typeof fetch, timeoutMs: number): Promise<OpenApiRecord> {
  let document: Record<string, unknown>;
  if (typeof spec === "string") {
    const doing = `fetching its OpenAPI document ${spec}`;
    let text: string;
    try {
      text = await withTimeout(connection, doing, timeoutMs, undefined, async (signal) => {
        const response = await fetchFn(spec, { headers: { accept: "application/json" }, signal });
        if (!response.ok) {
          await response.body?.cancel();
          throw new Error(`HTTP ${response.status}`);
        }
        return response.text();
      });
    } catch (error) {
      throw failure(connection, doing, error);
    }
    try {
      document = JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      throw failure(connection, "reading its OpenAPI document (JSON expected)", error);
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
  const names = uniqueNames(operations.map(({ method, path, operation }) => operation.operationId ?? `${method}_${path}`), connection);
  const tools = operations.map(({ method, path, operation }, index): OpenApiToolRecord => {
    const properties: Record<string, unknown> = {};
    const required: string[] = [];
    const parameters: OpenApiToolRecord["parameters"] = [];
    for (const parameter of operation.parameters ?? []) {
      if (parameter.in !== "path" && parameter.in !== "query" && parameter.in !== "header") continue;
      properties[parameter.name] = { ...plainSchema(acyclic(parameter.schema ?? { type: "string" })), ...(parameter.description ? { description: parameter.description } : {}) };
      if (parameter.required || parameter.in === "path") required.push(parameter.name);
      parameters.push({ name: parameter.name, in: parameter.in, ...(parameter.style ? { style: parameter.style } : {}), ...(typeof parameter.explode === "boolean" ? { explode: parameter.explode } : {}) });
    }
    const bodySchema = operation.requestBody?.content?.["application/json"]?.schema;
    if (bodySchema) {
      properties.body = plainSchema(acyclic(bodySchema));
      if (operation.requestBody?.required) required.push("body");
    }
    return {
      name: names[index]!,
      method: method.toUpperCase(),
      path,
      description: operation.summary ?? operation.description ?? `${method.toUpperCase()} ${path}`,
      inputSchema: { type: "object", properties, ...(required.length ? { required } : {}) },
      parameters,
      hasBody: Boolean(bodySchema),
    };
  });
  return JSON.parse(JSON.stringify({ baseUrl: resolvedBase, tools })) as OpenApiRecord;
}

/** The request an OpenAPI tool call makes. */
export function openApiRequest(record: OpenApiRecord, tool: OpenApiToolRecord, input: Record<string, unknown>): { url: string; headers: Record<string, string>; body?: unknown } | { error: string } {
  let path = tool.path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  for (const parameter of tool.parameters) {
    const value = input[parameter.name];
    if (parameter.in === "path") {
      if (value === undefined || value === null || value === "") return { error: `path parameter "${parameter.name}" is required` };
      path = path.replace(`{${parameter.name}}`, encodeURIComponent(simpleStyle(value, parameter.explode === true)));
    } else if (value !== undefined && value !== null) {
      if (parameter.in === "query") appendQuery(query, parameter, value);
      else headers[parameter.name] = simpleStyle(value, parameter.explode === true);
    }
  }
  const search = query.toString();
  return { url: `${record.baseUrl}${path}${search ? `?${search}` : ""}`, headers, ...(tool.hasBody && input.body !== undefined ? { body: input.body } : {}) };
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

/** A query parameter in its OpenAPI style: `form` (default; explode: ids=1&ids=2), `spaceDelimited`, `pipeDelimited`, `deepObject` (filter[sky]=clear). */
function appendQuery(query: URLSearchParams, parameter: OpenApiToolRecord["parameters"][number], value: unknown): void {
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
