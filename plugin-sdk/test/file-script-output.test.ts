import { describe, expect, it } from "vitest";
import { preparedWrite } from "../src/index.js";

describe("preparedWrite", () => {
  it("takes prepareWrite's output as printed: the mode line, then the real path and its line end", () => {
    expect(preparedWrite("600 1000 1000\n/workspace/notes.txt\n", "notes.txt")).toEqual({ target: "/workspace/notes.txt", existing: { mode: 0o600, uid: 1000, gid: 1000 } });
    expect(preparedWrite("new\n/workspace/a b \n", "a b ")).toEqual({ target: "/workspace/a b ", existing: undefined });
  });

  it("refuses a real path that itself ends in a newline, instead of writing the file named without it", () => {
    expect(() => preparedWrite("new\n/workspace/notes.txt\n\n", "notes.txt")).toThrow(expect.objectContaining({ code: "AL_ERR_PATH_ESCAPE" }));
  });

  it("refuses a path outside /workspace", () => {
    expect(() => preparedWrite("new\n/etc/passwd\n", "x")).toThrow(expect.objectContaining({ code: "AL_ERR_PATH_ESCAPE" }));
  });
});
