import { describe, expect, it } from "vitest";
import { defineInstrumentation } from "@assemblyline-agents/core";
import { startInstrumentation } from "@assemblyline-agents/runtime";

const file = "instrumentation.ts";

describe("the service name spans carry, and the OpenTelemetry variables", () => {
  it("takes OTEL_SERVICE_NAME when instrumentation.ts names no service, over service.name in OTEL_RESOURCE_ATTRIBUTES", async () => {
    const unnamed = defineInstrumentation({ setup: () => undefined });
    expect(await startInstrumentation(unnamed, file, { OTEL_SERVICE_NAME: "billing", OTEL_RESOURCE_ATTRIBUTES: "service.name=other" })).toMatchObject({ serviceName: "billing" });
    expect(await startInstrumentation(unnamed, file, { OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=prod,service.name=billing%20eu" })).toMatchObject({ serviceName: "billing eu" });
  });

  it("keeps the serviceName instrumentation.ts gives, and leaves the agent id's default to the runtime when nothing names one", async () => {
    const named = defineInstrumentation({ serviceName: "learning-agent", setup: () => undefined });
    expect(await startInstrumentation(named, file, { OTEL_SERVICE_NAME: "billing" })).toMatchObject({ serviceName: "learning-agent" });
    const unnamed = await startInstrumentation(defineInstrumentation({ setup: () => undefined }), file, { OTEL_SERVICE_NAME: " ", OTEL_RESOURCE_ATTRIBUTES: "service.name=%E0" });
    expect(unnamed).not.toHaveProperty("serviceName");
  });
});
