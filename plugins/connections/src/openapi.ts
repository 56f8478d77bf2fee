import { AssemblyLineError, type JsonValue } from "@assemblyline-agents/core";
import { withTimeout } from "./http-request.js";
import { failure } from "./mcp.js";
import { plainSchema, uniqueNames } from "./tool-names.js";

const METHODS = ["get", "put", "post", "delete", "patch"] as const;

/** One operation of an OpenAPI document as a tool, as described once and persisted. */
export interface OpenApiToolRecord {
  name: string;
  method: string;
  path: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** Where each input property goes. */
  parameters: Array<{ name: string; in: "path" | "query" | "header" }>;
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
  parameters?: Array<{ name: string; in: string; required?: boolean; description?: string; schema?: unknown }>;
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
  let api: { servers?: Array<{ url: string }>; paths?: Record<string, Record<string, Operation>> };
  try {
    api = (await SwaggerParser.validate(document as never, { resolve: { external: false } } as never)) as unknown as typeof api;
  } catch (error) {
    throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `connection "${connection}": the OpenAPI document is invalid: ${(error as Error).message}`, {
      fix: "Fix the document (swagger-parser validates it), or point spec at a valid one.",
    });
  }
  const server = baseUrl ?? api.servers?.[0]?.url;
  if (!server) {
    throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `connection "${connection}": no baseUrl and the document lists no servers`, { fix: "Pass baseUrl." });
  }
  const resolvedBase = new URL(server, typeof spec === "string" ? spec : undefined).toString().replace(/\/$/, "");
  const operations: Array<{ method: string; path: string; operation: Operation }> = [];
  for (const [path, item] of Object.entries(api.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation) operations.push({ method, path, operation: { ...operation, parameters: [...((item as { parameters?: Operation["parameters"] }).parameters ?? []), ...(operation.parameters ?? [])] } });
    }
  }
  const names = uniqueNames(operations.map(({ method, path, operation }) => operation.operationId ?? `${method}_${path}`));
  const tools = operations.map(({ method, path, operation }, index): OpenApiToolRecord => {
    const properties: Record<string, unknown> = {};
    const required: string[] = [];
    const parameters: OpenApiToolRecord["parameters"] = [];
    for (const parameter of operation.parameters ?? []) {
      if (parameter.in !== "path" && parameter.in !== "query" && parameter.in !== "header") continue;
      properties[parameter.name] = { ...plainSchema(parameter.schema ?? { type: "string" }), ...(parameter.description ? { description: parameter.description } : {}) };
      if (parameter.required || parameter.in === "path") required.push(parameter.name);
      parameters.push({ name: parameter.name, in: parameter.in });
    }
    const bodySchema = operation.requestBody?.content?.["application/json"]?.schema;
    if (bodySchema) {
      properties.body = plainSchema(bodySchema);
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
      path = path.replace(`{${parameter.name}}`, encodeURIComponent(String(value)));
    } else if (value !== undefined && value !== null) {
      if (parameter.in === "query") query.set(parameter.name, typeof value === "string" ? value : JSON.stringify(value));
      else headers[parameter.name] = String(value);
    }
  }
  const search = query.toString();
  return { url: `${record.baseUrl}${path}${search ? `?${search}` : ""}`, headers, ...(tool.hasBody && input.body !== undefined ? { body: input.body } : {}) };
}

export type { JsonValue };
