import { describe, expect, it } from "vitest";
import { defineHttpConnection, defineMcpConnection, defineOpenApiConnection, type OutboundResolver } from "@assemblyline-agents/core";
import { EncryptedGrantStore, createConnections } from "../src/index.js";

const weather = defineHttpConnection({ baseUrl: "https://weather.example", description: "Forecasts", endpoints: { forecast: { method: "GET", path: "/forecast", description: "The forecast" } } });

describe("createConnections's options, checked against config.schema.json", () => {
  it("refuses a misspelt option, naming it, instead of registering no connections", () => {
    const refusal = () => createConnections({ connection: { weather } } as never);
    expect(refusal).toThrow(expect.objectContaining({ code: "AL_ERR_CONNECTION_DEFINITION" }));
    expect(refusal).toThrow(/createConnections: "connection" is not an option/);
    expect(refusal).toThrow(/fix: .*\(connections, grants, resolve, requestTimeoutMs, maxResponseBytes, logger, mcpSessions, mcpSessionIdleMs\)/);
  });

  it("refuses a connection name that is not snake_case, and a definition that is not an object", () => {
    expect(() => createConnections({ connections: { "Weather-API": weather } })).toThrow(/options.connections key "Weather-API" must match pattern/);
    expect(() => createConnections({ connections: { weather: "https://weather.example" } } as never)).toThrow(/options.connections.weather must be object/);
  });

  it("accepts every documented option, and none", () => {
    const resolve: OutboundResolver = async () => [{ address: "93.184.216.34", family: 4 }];
    const grants = new EncryptedGrantStore({ path: "/tmp/al-unused-grants.json", secretKey: "k".repeat(32) });
    expect(createConnections({ connections: { weather }, grants, resolve }).connections).toEqual({ weather });
    expect(createConnections({ grants: undefined }).connections).toEqual({});
    expect(createConnections({ mcpSessions: "run", mcpSessionIdleMs: 60_000 }).connections).toEqual({});
    expect(createConnections({ mcpSessions: "shared" }).connections).toEqual({});
    expect(createConnections().connections).toEqual({});
  });
});

describe("each connection definition, checked when createConnections is called", () => {
  const refusal = (definition: unknown) => () => createConnections({ connections: { svc: definition as never } });

  it("refuses a field its kind does not read, naming it, instead of ignoring it", () => {
    const headers = refusal(defineMcpConnection({ url: "https://mcp.example/mcp", description: "Docs", headers: { "x-api-key": "k" } } as never));
    expect(headers).toThrow(expect.objectContaining({ code: "AL_ERR_CONNECTION_DEFINITION" }));
    expect(headers).toThrow(/connection "svc": "headers" is not a field of an mcp connection/);
    expect(headers).toThrow(/fix: Use only description, auth, approval, url, command, args, env, kind/);
    expect(refusal(defineHttpConnection({ baseUrl: "https://weather.example", description: "Forecasts", endpoints: {}, timeout: 5 } as never))).toThrow(/"timeout" is not a field of an http connection/);
  });

  it("refuses fields that only apply to the other MCP transport", () => {
    expect(refusal(defineMcpConnection({ url: "https://mcp.example/mcp", env: { TOKEN: "x" }, description: "Docs" }))).toThrow(/env only applies to a stdio server \(command\), not to url/);
    expect(refusal(defineMcpConnection({ command: "node", args: ["server.mjs"], auth: { grant: "docs" }, description: "Docs" }))).toThrow(/auth only applies to a url \(Streamable HTTP\) server, not to a stdio command/);
    expect(refusal(defineMcpConnection({ command: "node", args: "server.mjs", description: "Docs" } as never))).toThrow(/args must be an array of strings/);
  });

  it("refuses a url, spec or baseUrl that is not an absolute http(s) URL, naming the field", () => {
    expect(refusal(defineMcpConnection({ url: "mcp.example/mcp", description: "Docs" }))).toThrow(/url "mcp.example\/mcp" is not an absolute http\(s\) URL/);
    expect(refusal(defineOpenApiConnection({ spec: "file:///etc/openapi.json", description: "API" }))).toThrow(/spec "file:\/\/\/etc\/openapi.json" is not an absolute http\(s\) URL/);
    expect(refusal(defineOpenApiConnection({ spec: { openapi: "3.0.3" }, baseUrl: "/v1", description: "API" }))).toThrow(/baseUrl "\/v1" is not an absolute http\(s\) URL/);
    expect(refusal(defineHttpConnection({ baseUrl: "https://user:hunter2@weather.example", description: "Forecasts", endpoints: { forecast: { method: "GET", path: "/f", description: "F" } } }))).toThrow(/baseUrl carries credentials in the URL/);
  });

  it("checks http endpoints and auth up front, not at the first call", () => {
    expect(refusal(defineHttpConnection({ baseUrl: "https://weather.example", description: "Forecasts", endpoints: { forecast: { method: "FETCH", path: "/f", description: "F" } } } as never))).toThrow(/endpoint forecast: method "FETCH" is not GET/);
    expect(refusal(defineHttpConnection({ baseUrl: "https://weather.example", description: "Forecasts", auth: { grant: "w", secret: "s" }, endpoints: { forecast: { method: "GET", path: "/f", description: "F" } } } as never))).toThrow(/auth.secret is not a field of auth/);
    expect(refusal(defineHttpConnection({ baseUrl: "https://weather.example", description: "Forecasts", auth: { grant: "w", header: "x api key" }, endpoints: { forecast: { method: "GET", path: "/f", description: "F" } } }))).toThrow(/auth.header "x api key" is not an HTTP header name/);
  });
});
