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
