import { describe, expect, it } from "vitest";
import { checkWriteContent, isAssemblyLineError } from "@assemblyline-agents/core";

describe("checkWriteContent", () => {
  it("passes text and bytes (a Buffer too) through unchanged", () => {
    const bytes = new Uint8Array([1, 2]);
    const buffer = Buffer.from("x");
    expect(checkWriteContent("text", "/workspace/a.txt")).toBe("text");
    expect(checkWriteContent(bytes, "/workspace/a.txt")).toBe(bytes);
    expect(checkWriteContent(buffer, "/workspace/a.txt")).toBe(buffer);
  });

  it("refuses anything else with AL_ERR_SANDBOX_DEFINITION, saying what it got and to pass a string or a Uint8Array", () => {
    const cases: Array<[unknown, string]> = [
      [null, "content is null"],
      [undefined, "content is of type undefined"],
      [42, "content is of type number"],
      [{}, "content is of type Object"],
      [new ArrayBuffer(4), "content is of type ArrayBuffer"],
      [new Uint16Array(2), "content is of type Uint16Array"],
      [[1, 2], "content is of type Array"],
    ];
    for (const [content, said] of cases) {
      let error: unknown;
      try {
        checkWriteContent(content, "/workspace/a.txt");
      } catch (caught) {
        error = caught;
      }
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
      expect((error as Error).message).toContain(`writeFile "/workspace/a.txt": ${said}, not a string or a Uint8Array`);
      expect((error as { fix?: string }).fix).toContain("a string");
    }
  });
});
