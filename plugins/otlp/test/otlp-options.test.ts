import { describe, expect, it } from "vitest";
import { createOtlpSink, createOtlpSinkFromEnv } from "@assemblyline-agents/otlp";

const endpoint = "http://collector.invalid:4318";

describe("createOtlpSink's options, checked against config.schema.json", () => {
  it("refuses a misspelt option, naming it, instead of ignoring it", () => {
    const refusal = () => createOtlpSink({ endpoint, maxBatch: 10, timeout: 5_000 } as never);
    expect(refusal).toThrow(expect.objectContaining({ code: "AL_ERR_OTLP_CONFIG" }));
    expect(refusal).toThrow(/"maxBatch" is not an option; "timeout" is not an option/);
    expect(refusal).toThrow(/fix: .*maxBatchSize.*timeoutMs/);
  });

  it("refuses a misspelt override of createOtlpSinkFromEnv too", () => {
    expect(() => createOtlpSinkFromEnv({}, { scheduledDelay: 10 } as never)).toThrow(/AL_ERR_OTLP_CONFIG: createOtlpSink: "scheduledDelay" is not an option/);
  });

  it("refuses limits that are not whole numbers in range, and headers HTTP cannot carry", () => {
    expect(() => createOtlpSink({ endpoint, timeoutMs: 1.5 })).toThrow(/options.timeoutMs must be integer/);
    expect(() => createOtlpSink({ endpoint, maxQueueSize: Infinity })).toThrow(/options.maxQueueSize must be <= 2147483647/);
    expect(() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_TIMEOUT: "soon" })).toThrow(/AL_ERR_OTLP_CONFIG: OTEL_EXPORTER_OTLP_TIMEOUT is "soon", not a whole number of milliseconds/);
    expect(() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_TIMEOUT: "500", OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: "10s" })).toThrow(/OTEL_EXPORTER_OTLP_TRACES_TIMEOUT is "10s"/);
    expect(() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_TRACES_HEADERS: "Authorization" })).toThrow(/OTEL_EXPORTER_OTLP_TRACES_HEADERS: entry 1 \(of the comma-separated list\) is not in key=value form/);
    expect(() => createOtlpSink({ endpoint, headers: { ok: "1", "x tenant": "acme" } })).toThrow(/options.headers entry 2: its name must match pattern/);
    expect(() => createOtlpSink({ endpoint, headers: { "x-tenant": "acme\r\nx-evil: 1" } })).toThrow(/options.headers entry 1: its value must match pattern/);
    // fetch refuses such a URL: every batch would fail. The password is not repeated in the error.
    const withPassword = () => createOtlpSink({ endpoint: "https://user:hunter2@otlp.example.com" });
    expect(withPassword).toThrow(/AL_ERR_OTLP_CONFIG: OTLP endpoint https:\/\/otlp.example.com carries a user name or password in its URL/);
    expect(withPassword).not.toThrow(/hunter2/);
    // A query may hold a key too: the refusal of a gRPC address does not repeat it.
    const grpcWithKey = () => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "grpc://collector:4317/?api_key=hunter2" });
    expect(grpcWithKey).toThrow(/OTLP endpoint "grpc:\/\/collector:4317\/\?<query>" uses grpc:/);
    expect(grpcWithKey).not.toThrow(/hunter2/);
    // JSON Schema has no type for a function: checked in code, before it would throw on the warning path.
    expect(() => createOtlpSink({ endpoint, onWarning: "log" } as never)).toThrow(/AL_ERR_OTLP_CONFIG: createOtlpSink: onWarning is string, not a function/);
  });

  it("never quotes an endpoint's user name, password, query or fragment, however the endpoint is malformed", () => {
    const secret = /sk-SECRET|123456|hunter2/;
    const cases: Array<[() => unknown, RegExp]> = [
      // A password with a "/" in an endpoint without a scheme: WHATWG would read the part after it as a path.
      [() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "user:sk-SECRET/123456@collector:4318" }), /OTLP endpoint "<credentials>@collector:4318" is not a URL: it has no http:\/\/ or https:\/\/ scheme/],
      [() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "user:123456/hunter2@collector:4318" }), /OTLP endpoint "<credentials>@collector:4318" is not a URL/],
      [() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318/v1/traces#token=sk-SECRET123456" }), /OTLP endpoint "collector:4318\/v1\/traces#<fragment>" is not a URL/],
      [() => createOtlpSink({ url: "ftp://collector/v1/traces#sk-SECRET123456" }), /OTLP endpoint "ftp:\/\/collector\/v1\/traces#<fragment>" uses ftp:/],
      [() => createOtlpSink({ endpoint: "http://user:sk-SECRET/123456@collector:4318" }), /OTLP endpoint "http:\/\/<credentials>@collector:4318" is not a URL/],
      // WHATWG reads this as host "user", port 4318 and a path: refused, not posted to "user" and quoted in every warning.
      [() => createOtlpSink({ endpoint: "http://user:4318/hunter2@collector:4318" }), /OTLP endpoint "http:\/\/<credentials>@collector:4318" has an @ in its path/],
      [() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "grpc://collector:4317/v1/traces?key=hunter2#sk-SECRET" }), /OTLP endpoint "grpc:\/\/collector:4317\/v1\/traces\?<query>#<fragment>" uses grpc:/],
      [() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://[sk-SECRET123456" }), /OTLP endpoint \(not quoted: .*\) is not a URL/],
    ];
    for (const [attempt, expected] of cases) {
      expect(attempt).toThrow(expect.objectContaining({ code: "AL_ERR_OTLP_CONFIG" }));
      expect(attempt).toThrow(expected);
      let thrown: unknown;
      try {
        attempt();
      } catch (error) {
        thrown = error;
      }
      const { message, fix, details } = thrown as { message: string; fix?: string; details?: unknown };
      expect(`${message} ${fix ?? ""} ${JSON.stringify(details ?? {})}`).not.toMatch(secret);
    }
  });

  it("names a malformed header entry by its place, never quoting it: the variable holds secrets and the error reaches boot logs", () => {
    const bearer = () => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_HEADERS: "x-tenant=acme,Bearer sk-live-9f8e7d6c5b4a" });
    expect(bearer).toThrow(expect.objectContaining({ code: "AL_ERR_OTLP_CONFIG" }));
    expect(bearer).toThrow(/OTEL_EXPORTER_OTLP_HEADERS: entry 2 \(of the comma-separated list\) is not in key=value form/);
    expect(bearer).not.toThrow(/sk-live|Bearer/);
    const colon = () => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_HEADERS: "pk-lf-1234:sk-lf-5678" });
    expect(colon).toThrow(/entry 1 .* has a colon where the = belongs/);
    expect(colon).not.toThrow(/pk-lf|sk-lf/);
    const noKey = () => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_TRACES_HEADERS: "=sk-live-9f8e7d6c5b4a" });
    expect(noKey).toThrow(/OTEL_EXPORTER_OTLP_TRACES_HEADERS: entry 1/);
    expect(noKey).not.toThrow(/sk-live/);
  });

  it("refuses a header written in HTTP's form without quoting it, even when the credential's base64 padding supplies an =", () => {
    const credential = Buffer.from("pk-lf-public:sk-lf-SECRET1234").toString("base64");
    expect(credential.endsWith("=")).toBe(true);
    for (const written of [`Authorization: Basic ${credential}`, `Authorization Basic ${credential}`]) {
      const refusal = () => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_HEADERS: `x-tenant=acme,${written}` });
      expect(refusal).toThrow(expect.objectContaining({ code: "AL_ERR_OTLP_CONFIG" }));
      expect(refusal).toThrow(/OTEL_EXPORTER_OTLP_HEADERS: entry 2 \(of the comma-separated list\) is not in key=value form/);
      expect(refusal).not.toThrow(new RegExp(credential.slice(0, 12)));
    }
    expect(() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_HEADERS: `Authorization: Basic ${credential}` })).toThrow(/has a colon where the = belongs/);
    // The same mistake made in the options: the key is the credential, and is not quoted either.
    const option = () => createOtlpSink({ endpoint, headers: { [`Authorization: Basic ${credential}`]: "" } });
    expect(option).toThrow(/options.headers entry 1: its name must match pattern/);
    expect(option).not.toThrow(new RegExp(credential.slice(0, 12)));
  });

  it("refuses at setup a header value HTTP cannot carry, instead of failing every export later", () => {
    const fromEnv = () => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_HEADERS: "x-tenant=%E2%82%ACsecret-tenant" });
    expect(fromEnv).toThrow(/AL_ERR_OTLP_CONFIG: OTEL_EXPORTER_OTLP_HEADERS: the value of x-tenant has a character an HTTP header cannot carry/);
    expect(fromEnv).not.toThrow(/secret-tenant/);
    const option = () => createOtlpSink({ endpoint, headers: { "x-tenant": "€secret-tenant" } });
    expect(option).toThrow(/AL_ERR_OTLP_CONFIG: createOtlpSink: options.headers entry 1: its value must match pattern/);
    expect(option).not.toThrow(/secret-tenant/);
    expect(() => createOtlpSink({ endpoint, headers: { "x-tenant": "acme\tcorp and co" } })).not.toThrow();
  });

  it("accepts every documented option, and undefined for any of them", async () => {
    const everything = createOtlpSink({
      endpoint,
      headers: { Authorization: "Basic abc", "x-tenant": "acme" },
      maxBatchSize: 100,
      maxQueueSize: 1_000,
      scheduledDelayMs: 0,
      timeoutMs: 2_000,
      maxAttempts: 3,
      initialBackoffMs: 0,
      maxBackoffMs: 1_000,
      onWarning: () => {},
    });
    const byUrl = createOtlpSink({ url: `${endpoint}/custom/traces`, endpoint: undefined, maxBatchSize: undefined });
    const fromEnv = createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_HEADERS: "a=b", OTEL_EXPORTER_OTLP_TIMEOUT: "500" }, { maxAttempts: 1 });
    for (const sink of [everything, byUrl, fromEnv]) {
      expect(sink.stats()).toEqual({ exported: 0, dropped: 0, queued: 0 });
      await sink.shutdown();
    }
  });
});
