import { describe, expect, it } from "vitest";
import { defineHttpConnection, type OutboundResolver } from "@assemblyline-agents/core";
import { EncryptedGrantStore, createConnections } from "../src/index.js";

const weather = defineHttpConnection({ baseUrl: "https://weather.example", description: "Forecasts", endpoints: { forecast: { method: "GET", path: "/forecast", description: "The forecast" } } });

describe("createConnections's options, checked against config.schema.json", () => {
  it("refuses a misspelt option, naming it, instead of registering no connections", () => {
    const refusal = () => createConnections({ connection: { weather } } as never);
    expect(refusal).toThrow(expect.objectContaining({ code: "AL_ERR_CONNECTION_DEFINITION" }));
    expect(refusal).toThrow(/createConnections: "connection" is not an option/);
    expect(refusal).toThrow(/fix: .*\(connections, grants, resolve\)/);
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
    expect(createConnections().connections).toEqual({});
  });
});
