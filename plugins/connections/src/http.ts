import { AssemblyLineError, type HttpEndpoint } from "@assemblyline-agents/core";
import { MAX_TOOL_NAME_LENGTH, plainSchema } from "./tool-names.js";

const NAME = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"]);
/** What an endpoint is read for; anything else (`headers`, `query`, an `approval` of its own) would be dropped unsaid, so it is refused. */
const ENDPOINT_FIELDS = ["method", "path", "description", "body"];
/** The tool's own inputs beside the path parameters: a path parameter of the same name could never be given. */
const OWN_INPUTS = ["query", "body"];

export interface HttpToolRecord {
  name: string;
  method: string;
  path: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** The endpoint declares a body; absent in records described before it was kept (then a body is sent when given). */
  hasBody?: boolean;
}

export interface HttpRecord {
  baseUrl: string;
  tools: HttpToolRecord[];
}

/**
 * Plain HTTP endpoints as tools: input `{ <path params>, query?, body? }`.
 * Nothing is fetched to describe them; the definition is the description.
 */
export function describeHttp(connection: string, baseUrl: string, endpoints: Record<string, HttpEndpoint>): HttpRecord {
  const fail = (problem: string): never => {
    throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `connection "${connection}": ${problem}`, {
      fix: 'Write endpoints: { get_item: { method: "GET", path: "/items/{id}", description: "..." } }.',
    });
  };
  if (typeof endpoints !== "object" || endpoints === null || Object.keys(endpoints).length === 0) fail("endpoints must name at least one endpoint");
  const tools = Object.entries(endpoints).map(([name, endpoint]): HttpToolRecord => {
    if (!NAME.test(name)) fail(`endpoint name "${name}" is not snake_case`);
    // The endpoint's name is the tool's, as written: one model APIs refuse is refused here, not shortened out of the host's sight.
    const tool = `${connection}__${name}`;
    if (tool.length > MAX_TOOL_NAME_LENGTH) {
      throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `connection "${connection}": endpoint ${name}: its tool ${tool} is ${tool.length} characters, and model APIs refuse tool names over ${MAX_TOOL_NAME_LENGTH}`, {
        fix: `Name the endpoint in at most ${MAX_TOOL_NAME_LENGTH - connection.length - 2} characters (or shorten the connection's name).`,
      });
    }
    if (typeof endpoint !== "object" || endpoint === null || Array.isArray(endpoint)) fail(`endpoint ${name} must be an object ({ method, path, description, body? })`);
    const unknown = Object.keys(endpoint).filter((key) => !ENDPOINT_FIELDS.includes(key));
    if (unknown.length > 0) {
      throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `connection "${connection}": endpoint ${name}: ${unknown.map((key) => JSON.stringify(key)).join(", ")} ${unknown.length === 1 ? "is not a field" : "are not fields"} of an HTTP endpoint`, {
        fix: `Use only ${ENDPOINT_FIELDS.join(", ")}. Query parameters are the tool's query input; approval is the connection's (approval: ({ tool }) => tool === "${name}"); credentials come from auth: { grant }.`,
      });
    }
    if (!METHODS.has(endpoint.method)) fail(`endpoint ${name}: method ${JSON.stringify(endpoint.method)} is not GET, POST, PUT, PATCH or DELETE`);
    if (typeof endpoint.path !== "string" || !endpoint.path.startsWith("/")) fail(`endpoint ${name}: path must start with /`);
    // The tool's query input is written after the path as `?...`: a query already in the path would swallow it.
    const part = endpoint.path.includes("?") ? "query string" : endpoint.path.includes("#") ? "fragment" : undefined;
    if (part) {
      throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `connection "${connection}": endpoint ${name}: path ${JSON.stringify(endpoint.path)} has a ${part}; the tool's query input is written after the path, so the two would run into one another`, {
        fix: `Give path without ${part === "query string" ? "?..." : "#..."} (${JSON.stringify(endpoint.path.split(/[?#]/)[0])}); the model passes query parameters in the tool's query input ({ query: { type: "repo" } }).`,
      });
    }
    if (typeof endpoint.description !== "string" || endpoint.description.trim() === "") fail(`endpoint ${name}: description is required`);
    // fetch cannot send a body with GET: the tool would fail at every call that gives one.
    if (endpoint.body !== undefined && endpoint.method === "GET") {
      throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `connection "${connection}": endpoint ${name}: a GET request has no body, so body cannot be declared`, {
        fix: "Drop body and take the values as query parameters (the tool's query input), or use POST.",
      });
    }
    const pathParams = [...endpoint.path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]!);
    const clash = pathParams.find((param) => OWN_INPUTS.includes(param));
    if (clash !== undefined) {
      throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `connection "${connection}": endpoint ${name}: path parameter {${clash}} has the name of the tool's own ${clash} input (${clash === "query" ? "the query parameters" : "the request body"}), so it could never be given`, {
        fix: `Give {${clash}} another name in path (/search/{q}, not /search/{query}): query and body are every HTTP tool's own inputs.`,
      });
    }
    const properties: Record<string, unknown> = Object.fromEntries(pathParams.map((param) => [param, { type: "string" }]));
    properties.query = { type: "object", additionalProperties: { type: "string" } };
    if (endpoint.body) properties.body = plainSchema(endpoint.body);
    return {
      name,
      method: endpoint.method,
      path: endpoint.path,
      description: endpoint.description,
      // Any other field would be dropped unsent: the tool pipeline refuses it, naming it, so the model can correct the call.
      inputSchema: { type: "object", properties, additionalProperties: false, ...(pathParams.length ? { required: pathParams } : {}) },
      hasBody: Boolean(endpoint.body),
    };
  });
  return { baseUrl: baseUrl.replace(/\/$/, ""), tools };
}
