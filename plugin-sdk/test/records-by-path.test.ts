import { describe, expect, it } from "vitest";
import { MemoryRecordsByPath, RecordsByPath, type FileRecord, type MemoryRecord } from "../src/index.js";

const file = (path: string, size = 1): FileRecord => ({ path, blobKey: `blob:${path}`, size, contentType: "text/plain", sha256: "0", runId: null, createdAt: "2030-01-01T00:00:00.000Z" });
const paths = (records: FileRecord[]) => records.map((record) => record.path);

describe("RecordsByPath", () => {
  it("lists the records under a prefix sorted by path, stepping over the ones under excludePrefix", () => {
    const files = new RecordsByPath<FileRecord>();
    const all = ["/files/m.txt", "/files/attachments/r2/b.png", "/files/a.txt", "/files/attachments/r1/a.png", "/files/attachments/r10/c.png", "/files/attachmentsX.txt", "/other/x.txt", "/files/z.txt"];
    for (const path of all) files.set(path, file(path));
    expect(paths(files.list())).toEqual([...all].sort());
    expect(paths(files.list({ prefix: "/files/", excludePrefix: "/files/attachments/" }))).toEqual(["/files/a.txt", "/files/attachmentsX.txt", "/files/m.txt", "/files/z.txt"]);
    expect(paths(files.list({ prefix: "/files/attachments/r1" }))).toEqual(["/files/attachments/r1/a.png", "/files/attachments/r10/c.png"]);
    expect(paths(files.list({ prefix: "/files/attachments/", excludePrefix: "/files/attachments/r1/" }))).toEqual(["/files/attachments/r10/c.png", "/files/attachments/r2/b.png"]);
    expect(paths(files.list({ prefix: "/nothing/" }))).toEqual([]);
    expect(files.list({ excludePrefix: "" })).toEqual([]);
  });

  it("replaces a record in place and lets a deleted one go, from the map and the sorted paths", () => {
    const files = new RecordsByPath<FileRecord>();
    for (const path of ["/files/b.txt", "/files/a.txt", "/files/c.txt"]) files.set(path, file(path));
    files.set("/files/b.txt", file("/files/b.txt", 9));
    expect(files.size).toBe(3);
    expect(files.list().map((record) => record.size)).toEqual([1, 9, 1]);
    expect(files.delete("/files/a.txt")).toBe(true);
    expect(files.delete("/files/a.txt")).toBe(false);
    expect(paths(files.list())).toEqual(["/files/b.txt", "/files/c.txt"]);
    expect(files.has("/files/a.txt")).toBe(false);
    expect(files.get("/files/c.txt")?.path).toBe("/files/c.txt");
    expect(paths([...files.values()])).toEqual(["/files/b.txt", "/files/c.txt"]);
  });
  it("lists and counts as filtering and sorting every path would, through thousands of writes and deletes in any order", () => {
    // Paths from a small alphabet, so prefixes share paths, with the characters where UTF-16's order
    // and code points' part: on either side of the surrogates, and above U+FFFF.
    const alphabet = ["a", "b", "/", "\u00e9", "\ud7ff", "\ue000", "\ud83d\ude00", "\uffff", "\u{10ffff}"];
    let seed = 7;
    const random = (n: number) => {
      // An LCG's high bits: its low bits repeat in short cycles.
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor((seed / 2147483648) * n);
    };
    const randomPath = () => Array.from({ length: 1 + random(5) }, () => alphabet[random(alphabet.length)]).join("");
    const files = new RecordsByPath<FileRecord>();
    const held = new Set<string>();
    const check = () => {
      // Code-point order, as UTF-8 bytes sort (every path here is well-formed UTF-16).
      const sorted = [...held].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
      for (let probe = 0; probe < 20; probe += 1) {
        const prefix = random(4) === 0 ? "" : randomPath().slice(0, 1 + random(3));
        const excludePrefix = random(2) === 0 ? undefined : prefix + randomPath().slice(0, random(3));
        const expected = sorted.filter((path) => path.startsWith(prefix) && !(excludePrefix !== undefined && path.startsWith(excludePrefix)));
        const options = { prefix, ...(excludePrefix === undefined ? {} : { excludePrefix }) };
        expect({ options, paths: files.listPaths(options), count: files.count(options) }).toEqual({ options, paths: expected, count: expected.length });
        expect(files.countUnder(prefix)).toBe(sorted.filter((path) => path.startsWith(prefix)).length);
        expect(files.page(options, 3)).toEqual({ records: expected.slice(0, 3).map((path) => files.get(path)), total: expected.length });
      }
    };
    for (let step = 0; step < 3000; step += 1) {
      const path = randomPath();
      if (random(3) === 0) {
        expect(files.delete(path)).toBe(held.delete(path));
      } else {
        files.set(path, file(path));
        held.add(path);
      }
      if (step % 100 === 0) check();
    }
    check();
    expect(files.size).toBe(held.size);
  });
});

describe("a page's limit", () => {
  it("is refused unless a whole number, 0 or more, in an error naming the method it was given to", () => {
    const files = new RecordsByPath<FileRecord>();
    const memory = new MemoryRecordsByPath();
    for (const limit of [-1, 0.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => files.page({}, limit), `limit ${limit}`).toThrow(expect.objectContaining({ code: "AL_ERR_STATE_INPUT_INVALID", message: expect.stringContaining("RecordsByPath.page") }));
      expect(() => memory.first("", limit), `limit ${limit}`).toThrow(expect.objectContaining({ code: "AL_ERR_STATE_INPUT_INVALID", message: expect.stringContaining("MemoryRecordsByPath.first") }));
    }
    expect(files.page({}, 0)).toEqual({ records: [], total: 0 });
  });
});

describe("MemoryRecordsByPath", () => {
  const note = (path: string, content: string): MemoryRecord => ({ path, content, updatedAt: "2030-01-01T00:00:00.000Z" });

  it("lists paths under a prefix with the UTF-8 size of what was last written, and forgets a deleted one", () => {
    const memory = new MemoryRecordsByPath();
    memory.set("notes/b.md", note("notes/b.md", "h\u00e9llo"));
    memory.set("todo.md", note("todo.md", ""));
    memory.set("notes/a.md", note("notes/a.md", "x"));
    expect(memory.entries("notes/")).toEqual([
      { path: "notes/a.md", size: 1 },
      { path: "notes/b.md", size: 6 },
    ]);
    memory.set("notes/a.md", note("notes/a.md", "\u{1F600}\u{1F600}"));
    expect(memory.delete("todo.md")).toBe(true);
    expect(memory.entries()).toEqual([
      { path: "notes/a.md", size: 8 },
      { path: "notes/b.md", size: 6 },
    ]);
    expect(memory.listPaths({ prefix: "notes/b" })).toEqual(["notes/b.md"]);
    expect(memory.get("notes/a.md")?.content).toBe("\u{1F600}\u{1F600}");
    memory.set("todo.md", note("todo.md", "back"));
    expect(memory.entries("todo")).toEqual([{ path: "todo.md", size: 4 }]);
  });
});
