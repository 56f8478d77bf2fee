import type { FileListOptions, FileRecord } from "@assemblyline-agents/core";
import type { Pool } from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { MIGRATIONS, PostgresStateAdapter, migrateSchema } from "../src/index.js";
import { TEST_DATABASE_URL, dropSchema, probeDatabase, randomSchema, testPool } from "./support/database.js";

const probe = await probeDatabase("PostgreSQL folder counts");

const fileRecord = (path: string, blobKey = `blob:${path}`): FileRecord => ({
  path,
  blobKey,
  size: 3,
  contentType: "text/plain",
  sha256: "0".repeat(64),
  runId: null,
  createdAt: "2026-01-01T00:00:00.000Z",
});

/** Paths at every depth, beside the folders' edges: what starts with `/files` but not `/files/`, sorts just past a prefix, or is not ASCII. */
const FILE_PATHS = [
  "/files/a.txt",
  "/files/docs/x.md",
  "/files/docs/sub/deep/y.md",
  "/files/docs2/z.md",
  "/files/do.txt",
  "/files/attachments/r1/a.png",
  "/files/attachments/r2/b.png",
  "/files/attachments/r2/c/d.png",
  "/files/attachments0",
  "/files/\u00e9t\u00e9/\u{1F600}.txt",
  "/files/\uffff/x.txt",
  "/files/\uffff",
  "/files",
  "/files.txt",
  "/files-old/a",
  "/files0/b",
  "/filesX/c/d/e",
  "/other/f",
];

const MEMORY_PATHS = ["\uffff/a.md", "a.md", "notes/b.md", "notes/c.md", "notes/deep/er/d.md", "notes2/e.md", "note.md", "\u00e9/f.md", "x/y/z/w/v.md"];

/** Prefixes at every depth and edge, whole folders and not. */
const FILE_PREFIXES = ["", "/", "/f", "/files", "/files/", "/files/d", "/files/do", "/files/docs", "/files/docs/", "/files/docs/sub/", "/files/docs/sub/deep/", "/files/attachments/", "/files/attachments/r2/", "/files/\u00e9t\u00e9/", "/files/\uffff", "/files/\uffff/", "/nothing/"];
const FILE_EXCLUDES = [undefined, "/files/\uffff", "/files/attachments/", "/files/attachments", "/files/docs/sub/", "/files/", "/files", "", "/zzz/"];
const MEMORY_PREFIXES = ["", "n", "note", "notes", "notes/", "notes/deep/", "notes/deep/er/", "x/y/z/", "\u00e9/", "\uffff", "none/"];

/** Code-point order, as the primary keys (COLLATE "C") sort: not UTF-16's, which puts U+1F600 before U+FFFF. */
const byCodePoint = (a: string, b: string): number => {
  const [x, y] = [[...a].map((c) => c.codePointAt(0)!), [...b].map((c) => c.codePointAt(0)!)];
  for (let index = 0; index < Math.min(x.length, y.length); index += 1) if (x[index] !== y[index]) return x[index]! - y[index]!;
  return x.length - y.length;
};

/** A file record at each of FILE_PATHS and a memory file at each of MEMORY_PATHS. */
async function writeEveryPath(state: PostgresStateAdapter): Promise<void> {
  for (const path of FILE_PATHS) await state.putFileRecord(fileRecord(path));
  for (const path of MEMORY_PATHS) await state.writeMemory(path, `content of ${path}`);
}

/** Every listing's count and first entries, against the rows the tables hold, read and filtered here. */
async function expectCountsAsStored(state: PostgresStateAdapter, pool: Pool, schema: string): Promise<void> {
  const stored = async (table: string) => (await pool.query<{ path: string }>(`SELECT path FROM "${schema}".${table}`)).rows.map((row) => row.path).sort(byCodePoint);
  const [files, memory] = [await stored("files"), await stored("memory")];
  for (const prefix of FILE_PREFIXES) {
    for (const excludePrefix of FILE_EXCLUDES) {
      const options: FileListOptions = { prefix, ...(excludePrefix === undefined ? {} : { excludePrefix }) };
      const listed = files.filter((path) => path.startsWith(prefix) && !(excludePrefix !== undefined && path.startsWith(excludePrefix)));
      const page = await state.firstFileRecords(options, 2);
      expect({ options, total: page.total, first: page.records.map((record) => record.path) }).toEqual({ options, total: listed.length, first: listed.slice(0, 2) });
    }
  }
  for (const prefix of MEMORY_PREFIXES) {
    const listed = memory.filter((path) => path.startsWith(prefix));
    const page = await state.firstMemoryEntries(prefix, 2);
    expect({ prefix, total: page.total, first: page.entries.map((entry) => entry.path) }).toEqual({ prefix, total: listed.length, first: listed.slice(0, 2) });
  }
}

describe.skipIf(!probe.available)("PostgreSQL folder counts", () => {
  const admin = testPool();
  const schemas: string[] = [];
  const newSchema = () => {
    const schema = randomSchema("al_counts");
    schemas.push(schema);
    return schema;
  };

  afterAll(async () => {
    for (const schema of schemas) await dropSchema(admin, schema);
    await admin.end();
  });

  it("counts every prefix as the tables hold it, through rewrites and deletes", async () => {
    const schema = newSchema();
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      await writeEveryPath(state);
      await expectCountsAsStored(state, admin, schema);
      // A rewrite is the same path: counted once.
      await state.putFileRecord(fileRecord("/files/docs/x.md", "blob:rewritten"));
      await state.writeMemory("notes/b.md", "rewritten");
      await expectCountsAsStored(state, admin, schema);
      await state.deleteFileRecord("/files/attachments/r2/b.png");
      await state.deleteFileRecord("/files/never-written");
      await state.deleteMemory("notes/deep/er/d.md");
      await state.deleteMemory("never-written.md");
      await expectCountsAsStored(state, admin, schema);
      expect((await state.firstFileRecords({ prefix: "/files/attachments/" }, 0)).total).toBe(2);
      expect((await state.firstMemoryEntries(undefined, 0)).total).toBe(MEMORY_PATHS.length - 1);
    } finally {
      await state.close();
    }
  });

  it("stays exact with writers on many connections of two replicas, into the same folders", async () => {
    const schema = newSchema();
    const replicas = [0, 1].map(() => new PostgresStateAdapter({ connectionString: TEST_DATABASE_URL, schema, maxConnections: 20 }));
    try {
      await replicas[0]!.migrate();
      const paths = Array.from({ length: 120 }, (_, index) => `/files/shared/f${index}.txt`);
      await Promise.all(paths.map((path, index) => replicas[index % 2]!.putFileRecord(fileRecord(path))));
      // The same paths again from the other replica, a third of them deleted at the same time.
      await Promise.all([
        ...paths.map((path, index) => replicas[(index + 1) % 2]!.putFileRecord(fileRecord(path, "blob:again"))),
        ...paths.filter((_, index) => index % 3 === 0).map((path, index) => replicas[index % 2]!.deleteFileRecord(path)),
        ...Array.from({ length: 60 }, (_, index) => replicas[index % 2]!.writeMemory(`shared/m${index % 30}.md`, `${index}`)),
      ]);
      for (const replica of replicas) {
        expect((await replica.firstFileRecords({ prefix: "/files/" }, 1)).total).toBe((await replica.listFileRecords({ prefix: "/files/" })).length);
        expect((await replica.firstMemoryEntries("shared/", 1)).total).toBe(30);
      }
    } finally {
      await Promise.all(replicas.map((replica) => replica.close()));
    }
  });

  it("counts a store written before its counts were kept when it migrates", async () => {
    const schema = newSchema();
    // The migrations before the counts' (6); it and any after it apply when the adapter migrates.
    const counts = MIGRATIONS.find((migration) => migration.name === "folder counts of memory and files")!;
    const before = MIGRATIONS.filter((migration) => migration.version < counts.version);
    await migrateSchema(admin, schema, before);
    for (const path of FILE_PATHS) {
      await admin.query(`INSERT INTO "${schema}".files (path, blob_key, size, content_type, sha256, run_id, created_at) VALUES ($1, 'b', 1, 'text/plain', 's', NULL, 'c')`, [path]);
    }
    for (const path of MEMORY_PATHS) await admin.query(`INSERT INTO "${schema}".memory (path, content, updated_at) VALUES ($1, 'x', now())`, [path]);
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      expect((await state.migrate()).applied).toEqual(MIGRATIONS.filter((migration) => migration.version >= counts.version).map((migration) => migration.version));
      await expectCountsAsStored(state, admin, schema);
    } finally {
      await state.close();
    }
  });

  it("follows a path changed by UPDATE and a table emptied by TRUNCATE", async () => {
    const schema = newSchema();
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      await writeEveryPath(state);
      await admin.query(`UPDATE "${schema}".files SET path = '/files/moved/' || md5(path) WHERE starts_with(path, '/files/docs/')`);
      await admin.query(`TRUNCATE "${schema}".memory`);
      await expectCountsAsStored(state, admin, schema);
      await state.writeMemory("notes/after.md", "x");
      expect((await state.firstMemoryEntries(undefined, 5)).total).toBe(1);
    } finally {
      await state.close();
    }
  });
});
