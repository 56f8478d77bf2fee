import { describe, expect, it } from "vitest";
import { checkExecOptions, isAssemblyLineError } from "@assemblyline-agents/core";

function refusalOf(options: unknown): unknown {
  try {
    checkExecOptions(options);
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("checkExecOptions", () => {
  it("refuses an env value holding a NUL byte, naming the variable", () => {
    const error = refusalOf({ env: { PLAIN: "ok", SECRET_BLOB: "a\0b" } });
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
    expect((error as Error).message).toContain("exec option env.SECRET_BLOB holds a NUL byte");
  });

  it("passes env values without NUL, empty ones included", () => {
    const options = { env: { A: "", B: "x y\nz" } };
    expect(checkExecOptions(options)).toBe(options);
  });
});
