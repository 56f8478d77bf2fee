import { afterEach, describe, expect, it, vi } from "vitest";
import { createRuntimeLogger } from "@assemblyline-agents/runtime";

afterEach(() => void vi.unstubAllEnvs());

describe("createRuntimeLogger's level", () => {
  it("takes an empty ASSEMBLY_LINE_LOG_LEVEL as unset (the default, info), as the OTEL_EXPORTER_OTLP_* variables take theirs", () => {
    vi.stubEnv("ASSEMBLY_LINE_LOG_LEVEL", "");
    expect(() => createRuntimeLogger({ env: { ASSEMBLY_LINE_LOG_LEVEL: "" } })).not.toThrow();
    expect(() => createRuntimeLogger({ env: { ASSEMBLY_LINE_LOG_LEVEL: "  " } })).not.toThrow();
    expect(() => createRuntimeLogger()).not.toThrow();
  });

  it("reads the variable trimmed, as a shell or an env file may leave a space after it", () => {
    vi.stubEnv("ASSEMBLY_LINE_LOG_LEVEL", "");
    expect(() => createRuntimeLogger({ env: { ASSEMBLY_LINE_LOG_LEVEL: "warn " } })).not.toThrow();
    vi.stubEnv("ASSEMBLY_LINE_LOG_LEVEL", " debug");
    expect(() => createRuntimeLogger()).not.toThrow();
  });

  it("refuses a level that is not one, naming the source it came from: the option, or the variable", () => {
    vi.stubEnv("ASSEMBLY_LINE_LOG_LEVEL", "");
    const byOption = () => createRuntimeLogger({ level: "verbose", env: { ASSEMBLY_LINE_LOG_LEVEL: "info" } });
    expect(byOption).toThrow(TypeError);
    expect(byOption).toThrow(/createRuntimeLogger's level option is "verbose", not one of debug, info, warn, error/);
    expect(byOption).not.toThrow(/ASSEMBLY_LINE_LOG_LEVEL=/);
    // A variable is the operator's to fix, not a bug: a coded error the CLI and hosts print with its fix.
    const byVariable = () => createRuntimeLogger({ env: { ASSEMBLY_LINE_LOG_LEVEL: "WARNING" } });
    expect(byVariable).toThrow(expect.objectContaining({ code: "AL_ERR_HOST_CONFIG" }));
    expect(byVariable).toThrow(/ASSEMBLY_LINE_LOG_LEVEL=WARNING is not one of debug, info, warn, error\n {2}fix: Set ASSEMBLY_LINE_LOG_LEVEL to debug, info, warn or error, or unset it/);
  });
});
