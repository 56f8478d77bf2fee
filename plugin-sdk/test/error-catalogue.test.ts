import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { AssemblyLineError, errorCatalogue, isAssemblyLineError } from "@assemblyline-agents/core";

const doc = readFileSync(resolve(import.meta.dirname, "../../docs/errors.md"), "utf8");
const documented = [...doc.matchAll(/^### (AL_ERR_[A-Z_]+)$/gm)].map((match) => match[1]);

describe("error catalogue", () => {
  it("documents every code in docs/errors.md, with what to do", () => {
    const missing = Object.keys(errorCatalogue).filter((code) => !documented.includes(code));
    expect(missing, "add a ### section to docs/errors.md for each").toEqual([]);
    for (const code of Object.keys(errorCatalogue)) {
      const section = doc.split(`### ${code}\n`)[1]!.split("\n### ")[0]!;
      expect(section, `${code} needs a "Fix:" line`).toMatch(/^Fix: .+/m);
    }
  });

  it("documents no code the catalogue lacks", () => {
    expect(documented.filter((code) => !(code! in errorCatalogue))).toEqual([]);
  });

  it("carries code and fix in the message and survives a second copy of the package", () => {
    const error = new AssemblyLineError("AL_ERR_TOOL_NAME", "tools/x-y.ts is not snake_case", { fix: "rename it" });
    expect(error.message).toBe("AL_ERR_TOOL_NAME: tools/x-y.ts is not snake_case\n  fix: rename it");
    const copy = { name: "AssemblyLineError", code: "AL_ERR_TOOL_NAME", message: "" };
    expect(isAssemblyLineError(copy, "AL_ERR_TOOL_NAME")).toBe(true);
    expect(isAssemblyLineError(new Error("x"))).toBe(false);
  });
});
