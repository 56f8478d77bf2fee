import { defineSandbox, isAssemblyLineError } from "@assemblyline-agents/core";
import { describe, expect, it } from "vitest";
import { validateSandboxDefinition } from "../src/index.js";

function refusal(definition: unknown): Error {
  try {
    validateSandboxDefinition(definition);
  } catch (error) {
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
    return error as Error;
  }
  throw new Error(`expected ${JSON.stringify(definition)} to be refused`);
}

describe("validateSandboxDefinition", () => {
  it("accepts the spec's local, docker-style and snapshot examples", () => {
    const local = defineSandbox({ adapter: "local", image: "node:22", workingDirectory: "/workspace" });
    expect(validateSandboxDefinition(local)).toBe(local);
    expect(validateSandboxDefinition(defineSandbox({ adapter: "docker", network: "none" }))).toBeDefined();
    expect(
      validateSandboxDefinition(defineSandbox({ adapter: "daytona", image: "node:22", snapshot: { mode: "manual", retainLast: 3, reason: "operator-requested checkpoint" } })),
    ).toBeDefined();
  });

  it("refuses a workingDirectory alias, explaining the physical /workspace", () => {
    const error = refusal({ adapter: "local", workingDirectory: "/home/agent" });
    expect(error.message).toContain('"/home/agent"');
    expect(error.message).toContain("hosted shell commands see a real, physical /workspace");
    expect(refusal({ adapter: "local", workingDirectory: "/workspace/" }).message).toContain("workingDirectory");
  });

  it("calls /runtime retired", () => {
    expect(refusal({ adapter: "local", workingDirectory: "/runtime" }).message).toContain("/runtime is retired");
  });

  it("refuses an adapter that is not a string, naming the file", () => {
    const error = refusal({ adapter: 42 });
    expect(error.message).toContain("sandbox.ts has adapter: 42");
    refusal({ image: "node:22" });
    refusal({ adapter: "" });
  });

  it("refuses what is not a definition at all, and malformed optional keys", () => {
    refusal(undefined);
    refusal("local");
    refusal({ adapter: "local", image: 22 });
    refusal({ adapter: "local", snapshot: { mode: "sometimes" } });
    refusal({ adapter: "local", snapshot: { mode: "auto", retainLast: 0 } });
  });
});
