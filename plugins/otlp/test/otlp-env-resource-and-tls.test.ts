import { afterEach, describe, expect, it } from "vitest";
import { createOtlpSink, createOtlpSinkFromEnv } from "@assemblyline-agents/otlp";
import { finishedSpan } from "./support/span.js";
import { startOtlpReceiver } from "./support/otlp-receiver.js";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("createOtlpSinkFromEnv and the TLS file variables", () => {
  const variables = ["CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"].flatMap((name) => [`OTEL_EXPORTER_OTLP_${name}`, `OTEL_EXPORTER_OTLP_TRACES_${name}`]);
  for (const variable of variables) {
    it(`refuses ${variable}, which it does not load, naming it instead of sending without it`, () => {
      expect(() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://collector.internal:4318", [variable]: "/etc/otel/ca.pem" })).toThrow(
        expect.objectContaining({ code: "AL_ERR_OTLP_CONFIG", message: expect.stringContaining(`${variable} is set, but this sink does not load TLS files`) }),
      );
    });
  }

  it("takes them unset or empty", () => {
    expect(() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_CERTIFICATE: "", OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY: " " })).not.toThrow();
  });
});

describe("OTEL_RESOURCE_ATTRIBUTES", () => {
  it("adds its attributes, URL-decoded, to every exported span's resource, under the runtime's service.name and service.version", async () => {
    const receiver = await startOtlpReceiver();
    cleanups.push(receiver.close);
    const sink = createOtlpSinkFromEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=prod, k8s.pod.name=agent-7f9,team=a%2Cb,service.name=from-env,service.version=9" },
      { onWarning: () => {} },
    );
    sink.export(finishedSpan());
    await sink.flush();
    expect(receiver.failures).toEqual([]);
    expect(receiver.spans().map((received) => received.resource)).toEqual([
      { "deployment.environment": "prod", "k8s.pod.name": "agent-7f9", team: "a,b", "service.name": "learning-agent", "service.version": "rev1" },
    ]);
  });

  it("refuses an entry that is not key=value, or not valid URL encoding, naming its place", () => {
    expect(() => createOtlpSinkFromEnv({ OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=prod,k8s.pod.name" })).toThrow(
      expect.objectContaining({ code: "AL_ERR_OTLP_CONFIG", message: expect.stringContaining("OTEL_RESOURCE_ATTRIBUTES: entry 2 (of the comma-separated list) is not in key=value form") }),
    );
    expect(() => createOtlpSinkFromEnv({ OTEL_RESOURCE_ATTRIBUTES: "team=100%" })).toThrow(
      expect.objectContaining({ code: "AL_ERR_OTLP_CONFIG", message: expect.stringContaining("OTEL_RESOURCE_ATTRIBUTES: entry 1 (of the comma-separated list) is not valid URL encoding") }),
    );
  });

  it("is createOtlpSink's resourceAttributes option, which the schema checks", async () => {
    const receiver = await startOtlpReceiver();
    cleanups.push(receiver.close);
    const sink = createOtlpSink({ endpoint: receiver.url, resourceAttributes: { "deployment.environment": "staging" }, onWarning: () => {} });
    sink.export(finishedSpan());
    await sink.flush();
    expect(receiver.spans()[0]!.resource).toEqual({ "deployment.environment": "staging", "service.name": "learning-agent", "service.version": "rev1" });
    expect(() => createOtlpSink({ endpoint: receiver.url, resourceAttributes: { replicas: 3 } as never })).toThrow(expect.objectContaining({ code: "AL_ERR_OTLP_CONFIG" }));
  });
});
