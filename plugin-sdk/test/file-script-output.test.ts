import { describe, expect, it } from "vitest";
import { listedEntries, preparedWrite } from "../src/index.js";

describe("preparedWrite", () => {
  it("takes prepareWrite's output as printed: the mode line, then the real path and its line end", () => {
    expect(preparedWrite("600 1000 1000 1\n/workspace/notes.txt\n", "notes.txt")).toEqual({ target: "/workspace/notes.txt", existing: { mode: 0o600, uid: 1000, gid: 1000, links: 1 } });
    // A hard-linked file: its link count tells the write to replace it rather than write into the shared inode.
    expect(preparedWrite("644 0 0 2\n/workspace/b\n", "b")).toEqual({ target: "/workspace/b", existing: { mode: 0o644, uid: 0, gid: 0, links: 2 } });
    expect(preparedWrite("new\n/workspace/a b \n", "a b ")).toEqual({ target: "/workspace/a b ", existing: undefined });
  });

  it("refuses a real path that itself ends in a newline, instead of writing the file named without it", () => {
    expect(() => preparedWrite("new\n/workspace/notes.txt\n\n", "notes.txt")).toThrow(expect.objectContaining({ code: "AL_ERR_PATH_ESCAPE" }));
  });

  it("refuses a path outside /workspace", () => {
    expect(() => preparedWrite("new\n/etc/passwd\n", "x")).toThrow(expect.objectContaining({ code: "AL_ERR_PATH_ESCAPE" }));
  });
});

describe("listedEntries", () => {
  it("keeps a name holding CR, U+2028 or U+2029, which only a newline would end", () => {
    const names = ["cr\rname.txt", "ls\u2028name.txt", "ps\u2029name.txt", "plain.txt"];
    const output = `directory|4096|.\n${names.map((name) => `regular file|1|./${name}`).join("\n")}\n`;
    expect(listedEntries(output, "/workspace/d").map((entry) => entry.path)).toEqual(["/workspace/d", ...names.map((name) => `/workspace/d/${name}`)].sort());
  });

  it("keeps what is under a folder whose name holds a CR", () => {
    expect(listedEntries("directory|4096|./a\rb\nregular file|3|./a\rb/c.txt\n", "/workspace")).toEqual([
      { path: "/workspace/a\rb", type: "directory", size: 0 },
      { path: "/workspace/a\rb/c.txt", type: "file", size: 3 },
    ]);
  });
});
