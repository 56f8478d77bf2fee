import { describe, expect, it } from "vitest";
import { FileRecordsByPath, type FileRecord } from "../src/index.js";

const file = (path: string, size = 1): FileRecord => ({ path, blobKey: `blob:${path}`, size, contentType: "text/plain", sha256: "0", runId: null, createdAt: "2030-01-01T00:00:00.000Z" });
const paths = (records: FileRecord[]) => records.map((record) => record.path);

describe("FileRecordsByPath", () => {
  it("lists the records under a prefix sorted by path, stepping over the ones under excludePrefix", () => {
    const files = new FileRecordsByPath();
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
    const files = new FileRecordsByPath();
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
