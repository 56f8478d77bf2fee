import { execFileSync } from "node:child_process";
import { appendFile, mkdir, open, readFile, readdir, rm, stat, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FileStateAdapter } from "../src/index.js";
import { StateTables } from "../src/state/tables.js";
import { crashCopy as copyStateFolder, logLine, readSnapshotRows, tempFolders } from "./support/state-folders.js";

const folders = tempFolders("al-file-state-compaction-");
const tempFolder = () => folders.make();

/**
 * Make the next snapshot wait: its temp file is a FIFO, so the compaction's open of it
 * blocks until `release` reads it (then its fsync fails, as a pipe cannot be synced:
 * that compaction fails, as one on a full disk would).
 */
async function holdNextSnapshot(directory: string) {
  // The temp file is named by the holder's LOCK token.
  const { token } = JSON.parse(await readFile(join(directory, "LOCK"), "utf8")) as { token: string };
  const temp = join(directory, `snapshot.json.${token}.tmp`);
  execFileSync("mkfifo", [temp]);
  return {
    release: async () => {
      const reader = await open(temp, "r");
      await reader.readFile();
      await reader.close();
    },
  };
}

afterEach(() => folders.removeAll());

const newRun = (id: string) => ({ id, agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } });
const tick = (index: number) => [{ type: "tick", data: { index, padding: "x".repeat(200) } }];
const logsIn = async (directory: string) => (await readdir(directory)).filter((name) => name.endsWith(".wal")).sort();
const seqs = (count: number) => Array.from({ length: count }, (_, i) => i + 1);

/** What a kill -9 now would leave of `directory`, in a new folder. */
const crashCopy = async (directory: string) => copyStateFolder(directory, await tempFolder());

/** Append ticks to r1 until the log is cut (log-1 exists) while the snapshot is held; the last tick's index. */
async function cutWithSnapshotHeld(state: FileStateAdapter, directory: string) {
  const hold = await holdNextSnapshot(directory);
  let index = 0;
  while (!(await logsIn(directory)).includes("log-1.wal")) await state.appendEvents("r1", tick((index += 1)));
  return { hold, index };
}

/** A folder whose snapshot holds a row of every table (written, then folded when the folder is opened again). */
async function folderWithEveryTableInItsSnapshot(): Promise<string> {
  const directory = await tempFolder();
  const state = await FileStateAdapter.open({ directory });
  await fillEveryTable(state);
  await state.close();
  await (await FileStateAdapter.open({ directory, compactAfterBytes: 1, compactWhenSuperseded: 0 })).close();
  return directory;
}

/** A write to every table a snapshot holds. */
async function fillEveryTable(state: FileStateAdapter): Promise<void> {
  await state.createRun({ ...newRun("r1"), idempotencyKey: "key-1" });
  await state.appendEvents("r1", [{ type: "tick", data: { text: "ünïcødé 🎉" } }], {
    toolCall: { runId: "r1", callId: "c1", toolName: "t", input: { a: 1 }, inputDigest: "d1", status: "completed", output: { ok: true }, modelOutput: null, error: null, approvalId: null, question: null, createdAt: "2030-01-01T00:00:00.000Z", updatedAt: "2030-01-01T00:00:00.000Z" },
    step: { runId: "r1", key: "s1", result: { n: 1 }, metadata: { m: true }, createdAt: "2030-01-01T00:00:00.000Z" },
    checkpoint: { runId: "r1", continuation: { messages: ["hi"] }, createdAt: "2030-01-01T00:00:00.000Z" },
    delivery: { id: "d1", channel: "http", conversationId: null, payload: { text: "done" } },
  });
  await state.appendConversationMessages("conv-1", [{ role: "user", content: "hello", runId: "r1", createdAt: "2030-01-01T00:00:00.000Z" }]);
  await state.upsertSchedule({ id: "job-1", intervalMs: 60_000, nextRunAt: "2030-01-01T00:00:00.000Z", payload: { job: 1 }, enabled: true });
  await state.putFileRecord({ path: "/files/a.txt", blobKey: "blob-a", size: 1, contentType: "text/plain", sha256: "0", runId: "r1", createdAt: "2030-01-01T00:00:00.000Z" });
  await state.recordUsage({ id: "u1", runId: "r1", conversationId: null, provider: "p", model: "m", inputTokens: 1, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, createdAt: "2030-01-01T00:00:00.000Z" });
  await state.putSandboxSession({ key: "run-r1", adapter: "local", sessionId: "s1", data: { dir: "/tmp/s1" }, createdAt: "2030-01-01T00:00:00.000Z", updatedAt: "2030-01-01T00:00:00.000Z" });
  await state.writeMemory("notes/a.md", "remember");
  await state.putSetting("mode", { fast: true }, { actor: "tester" });
  const skill = { agentId: "agent", name: "skill-a", files: { "SKILL.md": "---\ndescription: a\n---\nbody" }, digest: "digest-a", seedDigest: null, seedRevision: null, changedBy: "user", conflict: null, updatedAt: "2030-01-01T00:00:00.000Z" } as const;
  expect(await state.putSkill(skill, { expectedDigest: null })).toBe(true);
}

/** What every table holds, read through the adapter. */
async function everyTable(state: FileStateAdapter) {
  return {
    run: await state.getRun("r1"),
    idempotent: (await state.createRun({ ...newRun("r2"), idempotencyKey: "key-1" })).run.id,
    events: await state.listEvents("r1"),
    toolCalls: await state.listToolCalls("r1"),
    step: await state.getStep("r1", "s1"),
    checkpoint: await state.getCheckpoint("r1"),
    conversation: await state.listConversationMessages("conv-1"),
    schedules: await state.listSchedules(),
    files: await state.listFileRecords(),
    usage: await state.listUsage({ runId: "r1" }),
    sandboxSessions: await state.listSandboxSessions(),
    memory: await state.listMemory(),
    setting: await state.getSetting("mode"),
    audit: await state.listSettingAudit({ key: "mode" }),
    skills: await state.listSkills("agent"),
    deliveries: await state.listDeliveries("r1"),
  };
}

describe("FileStateAdapter compaction", () => {
  it("never makes a write wait for the snapshot, and a crash while it is written loses nothing", async () => {
    const directory = await tempFolder();
    const state = await FileStateAdapter.open({ directory, compactAfterBytes: 4_000, compactWhenSuperseded: 0 });
    await state.createRun(newRun("r1"));
    const cut = await cutWithSnapshotHeld(state, directory);
    let index = cut.index;
    // The snapshot cannot be written; writes still commit, in the next generation's log.
    for (let more = 0; more < 30; more += 1) await state.appendEvents("r1", tick((index += 1)));
    expect(await logsIn(directory)).toEqual(["log-0.wal", "log-1.wal"]);

    // A crash now leaves no snapshot and both logs: reopening replays both, then folds them.
    const crashed = await crashCopy(directory);
    const reopened = await FileStateAdapter.open({ directory: crashed });
    expect((await reopened.listEvents("r1")).map((event) => event.seq)).toEqual(seqs(index + 1));
    await reopened.close();
    expect(await logsIn(crashed)).toEqual(["log-2.wal"]);
    expect(await readdir(crashed)).toContain("snapshot.json");

    // The held compaction fails; nothing is lost, and the next one folds both logs.
    await cut.hold.release();
    for (let more = 0; more < 30; more += 1) await state.appendEvents("r1", tick((index += 1)));
    await state.close();
    // Folded: one log is left, newer than both (writes that outgrow the new snapshot may have started another).
    const left = await logsIn(directory);
    expect(left).toHaveLength(1);
    expect(Number(left[0]!.slice(4, -4))).toBeGreaterThanOrEqual(2);
    expect((await readdir(directory)).filter((name) => name.endsWith(".tmp"))).toEqual([]);
    const again = await FileStateAdapter.open({ directory });
    expect((await again.listEvents("r1")).map((event) => event.seq)).toEqual(seqs(index + 1));
    await again.close();
  });

  it("writes its snapshot apart from the temp file another holder with this pid still writes, and removes that file", async () => {
    const directory = await tempFolder();
    const state = await FileStateAdapter.open({ directory, compactAfterBytes: 4_000, compactWhenSuperseded: 0 });
    await state.createRun(newRun("r1"));
    // A holder in another pid namespace often has this pid too (1 in a container). One frozen while it wrote
    // a snapshot, under a name made of its pid (as versions before this one named it), writes on when it wakes.
    const other = await open(join(directory, `snapshot.json.${process.pid}.tmp`), "w");
    let index = 0;
    try {
      while (!(await readdir(directory)).includes("snapshot.json")) await state.appendEvents("r1", tick((index += 1)));
      await state.close();
      await other.write("the other holder's bytes", 0);
    } finally {
      await other.close();
    }
    expect((await readdir(directory)).filter((name) => name.endsWith(".tmp"))).toEqual([]);
    const again = await FileStateAdapter.open({ directory });
    expect((await again.listEvents("r1")).map((event) => event.seq)).toEqual(seqs(index + 1));
    await again.close();
  });

  it("writes events to the snapshot whole (id, run id, seq, type, data, time), and reads them back as they were", async () => {
    const directory = await tempFolder();
    const state = await FileStateAdapter.open({ directory, compactAfterBytes: 2_000, compactWhenSuperseded: 0 });
    await state.createRun(newRun("r1"));
    const data = { text: 'quotes " and \\ and "ünïcødé" 🎉', nested: { list: [1, "two", null, { deep: true }] } };
    for (let index = 0; index < 30; index += 1) await state.appendEvents("r1", [{ type: "tick", data: { ...data, index } }], { run: { status: "running" } });
    const before = await state.listEvents("r1");
    await state.close();

    const [row] = (await readSnapshotRows(directory)).tables.runs!;
    // Each event in the snapshot has every field a reader of the file expects, in that order.
    expect(row.events.length).toBeGreaterThan(1);
    expect(row.events).toStrictEqual(before.slice(0, row.events.length).map(({ id, runId, seq, type, data, createdAt }) => ({ id, runId, seq, type, data, createdAt })));
    expect(Object.keys(row.events[1])).toEqual(["id", "runId", "seq", "type", "data", "createdAt"]);

    const reopened = await FileStateAdapter.open({ directory });
    expect(await reopened.listEvents("r1")).toStrictEqual(before);
    await reopened.close();
  });

  it("writes tool calls and steps to the snapshot whole, and reads them back as they were", async () => {
    const directory = await tempFolder();
    const state = await FileStateAdapter.open({ directory, compactAfterBytes: 2_000, compactWhenSuperseded: 0 });
    await state.createRun(newRun("r1"));
    const at = "2030-01-01T00:00:00.000Z";
    const call = (index: number, status: "requested" | "completed") => ({
      runId: "r1", callId: `c${index}`, toolName: "t", input: { text: 'quotes " and ünïcødé 🎉', index }, inputDigest: `d${index}`, status,
      output: status === "completed" ? { index } : null, modelOutput: null, error: null, approvalId: null, question: null, createdAt: at, updatedAt: at,
    });
    for (let index = 0; index < 20; index += 1) {
      await state.appendEvents("r1", [{ type: "tick", data: { index } }], { toolCall: call(index, "requested"), step: { runId: "r1", key: `s${index}`, result: { index, list: [1, "two"] }, metadata: { n: index }, createdAt: at } });
      await state.appendEvents("r1", [{ type: "tock", data: { index } }], { toolCall: call(index, "completed") });
    }
    const read = async (adapter: FileStateAdapter) => ({
      calls: await adapter.listToolCalls("r1"),
      call: await adapter.getToolCall("r1", "c3"),
      steps: await Promise.all(Array.from({ length: 20 }, (_, index) => adapter.getStep("r1", `s${index}`))),
    });
    const before = await read(state);
    await state.close();

    const [row] = (await readSnapshotRows(directory)).tables.runs!;
    expect(row.toolCalls.length).toBeGreaterThan(2);
    // The cut may have come between a call's two writes: its last call may be older than the one read.
    const cut = row.toolCalls.length - 1;
    expect(row.toolCalls.slice(0, cut)).toStrictEqual(before.calls.slice(0, cut));
    expect(row.toolCalls[cut]).toStrictEqual({ ...before.calls[cut], ...(row.toolCalls[cut].status === "requested" ? { status: "requested", output: null } : {}) });
    expect(row.steps).toStrictEqual(before.steps.slice(0, row.steps.length));
    expect(before.call).toMatchObject({ runId: "r1", callId: "c3", status: "completed", output: { index: 3 } });
    expect(before.steps[19]).toMatchObject({ runId: "r1", key: "s19", result: { index: 19, list: [1, "two"] }, metadata: { n: 19 } });

    const reopened = await FileStateAdapter.open({ directory });
    expect(await read(reopened)).toStrictEqual(before);
    await reopened.close();
  });

  it("reads every table back from a snapshot written by versions before format 2 (one JSON document), and writes the next in format 2", async () => {
    const directory = await folderWithEveryTableInItsSnapshot();
    const state = await FileStateAdapter.open({ directory });
    const before = await everyTable(state);
    await state.close();
    // Format 1 held the same rows, as one document: {"format":1,"generation":N,"tables":{"runs":[...],...}}.
    const { header, tables } = await readSnapshotRows(directory);
    expect(Object.keys(tables)).toEqual(expect.arrayContaining(["runs", "idempotency", "deliveries", "conversations", "schedules", "files", "usage", "sandboxSessions", "memory", "settings", "settingAudit", "skills"]));
    await writeFile(join(directory, "snapshot.json"), JSON.stringify({ format: 1, generation: header.generation, tables }));

    const reopened = await FileStateAdapter.open({ directory, compactAfterBytes: 1, compactWhenSuperseded: 0 });
    expect(await everyTable(reopened)).toStrictEqual(before);
    // Pending, as it was: the outbox can claim it.
    expect((await reopened.claimDeliveries({ owner: "o", ttlMs: 60_000 })).map((delivery) => delivery.id)).toEqual(["d1"]);
    // Larger than the snapshot, so the log outgrows it: the next snapshot is written.
    await reopened.writeMemory("notes/after.md", "after".repeat(2_000));
    await reopened.close();
    expect((await readSnapshotRows(directory)).header).toMatchObject({ format: 2 });
    const again = await FileStateAdapter.open({ directory });
    const { memory, deliveries, ...rest } = await everyTable(again);
    const { memory: _memory, deliveries: _deliveries, ...restBefore } = before;
    expect(rest).toStrictEqual(restBefore);
    expect(memory).toEqual(["notes/a.md", "notes/after.md"]);
    expect(deliveries.map((delivery) => delivery.lease?.owner)).toEqual(["o"]);
    expect((await again.readMemory("notes/after.md"))?.content).toBe("after".repeat(2_000));
    await again.close();
  });

  it("refuses a snapshot with a damaged line, or cut short of its end line, and leaves it as it is", async () => {
    const directory = await folderWithEveryTableInItsSnapshot();
    const path = join(directory, "snapshot.json");
    const written = await readFile(path, "utf8");
    const lines = written.split("\n").slice(0, -1);
    const rows = lines.length - 2;
    // Each damage, and what the refusal says of it.
    const variants: Record<string, [text: string, says: string]> = {
      // A changed byte in a row: its checksum no longer matches.
      damaged: [written.replace('"notes/a.md"', '"notes/b.md"'), "a damaged line at byte"],
      // Whole lines lost at its end, as a cut at a line's end would lose them.
      "cut short": [`${lines.slice(0, -3).join("\n")}\n`, `ends after ${rows - 2} rows, without its end line`],
      "an end line that counts other rows": [`${lines.slice(0, -1).join("\n")}\n${logLine(["end", rows + 1])}`, `end line counts ${rows + 1} rows, but it holds ${rows}`],
      "rows after the end": [`${written}${logLine(["memory", { path: "late.md", content: "", updatedAt: "2030-01-01T00:00:00.000Z" }])}`, "rows after its end"],
      "a table it does not know": [`${lines.slice(0, -1).join("\n")}\n${logLine(["nothing", {}])}${logLine(["end", rows + 1])}`, 'names no table "nothing"'],
    };
    for (const [name, [text, says]] of Object.entries(variants)) {
      expect(text, name).not.toBe(written);
      await writeFile(path, text);
      await expect(FileStateAdapter.open({ directory }), name).rejects.toMatchObject({ code: "AL_ERR_STATE_ROW_INVALID", message: expect.stringContaining(says) });
      expect(await readFile(path, "utf8"), name).toBe(text);
    }
    await writeFile(path, written);
    await (await FileStateAdapter.open({ directory })).close();
  });

  it("replays a snapshot that replaced the old one before the old log was deleted, and deletes that log", async () => {
    const directory = await tempFolder();
    const state = await FileStateAdapter.open({ directory, compactAfterBytes: 4_000, compactWhenSuperseded: 0 });
    await state.createRun(newRun("r1"));
    for (let index = 1; index <= 60; index += 1) await state.appendEvents("r1", tick(index));
    await state.close();
    const logs = await logsIn(directory);
    expect(logs).toHaveLength(1);
    // The crash came after the rename: a log the snapshot already holds is still there (replayed, it would add seq 62).
    const current = Number(logs[0]!.slice(4, -4));
    const record = { ops: [{ op: "events.append", runId: "r1", events: [{ id: "r1:62", runId: "r1", seq: 62, type: "tick", data: {}, createdAt: new Date().toISOString() }] }] };
    await appendFile(join(directory, `log-${current - 1}.wal`), logLine(record));
    const reopened = await FileStateAdapter.open({ directory });
    expect((await reopened.listEvents("r1")).map((event) => event.seq)).toEqual(Array.from({ length: 61 }, (_, i) => i + 1));
    await reopened.close();
    expect(await logsIn(directory)).toEqual([`log-${current}.wal`]);
  });

  it("refuses to open a folder whose logs cannot be replayed in order, and changes nothing in it", async () => {
    const directory = await tempFolder();
    const state = await FileStateAdapter.open({ directory, compactAfterBytes: 4_000, compactWhenSuperseded: 0 });
    await state.createRun(newRun("r1"));
    const { hold } = await cutWithSnapshotHeld(state, directory);
    await state.appendEvents("r1", tick(0));
    const torn = await crashCopy(directory);
    const missing = await crashCopy(directory);
    await hold.release();
    await state.close();

    // A torn record can only end the last log; in an earlier one, records after it depend on what it held.
    await appendFile(join(torn, "log-0.wal"), '1a2b3c4d {"ops":[{"op":"events.app');
    await expect(FileStateAdapter.open({ directory: torn })).rejects.toMatchObject({ code: "AL_ERR_STATE_ROW_INVALID" });
    expect(await logsIn(torn)).toEqual(["log-0.wal", "log-1.wal"]);

    // A log missing between two others, or before the only one left.
    await appendFile(join(missing, "log-2.wal"), "");
    await rm(join(missing, "log-1.wal"));
    await expect(FileStateAdapter.open({ directory: missing })).rejects.toMatchObject({ code: "AL_ERR_STATE_ROW_INVALID", message: expect.stringContaining("log-2.wal") });
    expect(await logsIn(missing)).toEqual(["log-0.wal", "log-2.wal"]);
    await rm(join(missing, "log-2.wal"));
    await rm(join(missing, "log-0.wal"));
    await appendFile(join(missing, "log-1.wal"), "");
    await expect(FileStateAdapter.open({ directory: missing })).rejects.toMatchObject({ code: "AL_ERR_STATE_ROW_INVALID", message: expect.stringContaining("log-0.wal") });
    expect(await logsIn(missing)).toEqual(["log-1.wal"]);
  });

  it("keeps a write that outgrew the log when the next log cannot be made, and folds later", async () => {
    const directory = await tempFolder();
    const state = await FileStateAdapter.open({ directory, compactAfterBytes: 4_000, compactWhenSuperseded: 0 });
    await state.createRun(newRun("r1"));
    // log-1.wal cannot be opened as a file while a folder holds its name.
    await mkdir(join(directory, "log-1.wal"));
    let index = 0;
    for (; index < 30; index += 1) await state.appendEvents("r1", tick(index + 1));
    expect(await readdir(directory)).not.toContain("snapshot.json");
    await rm(join(directory, "log-1.wal"), { recursive: true });
    for (; index < 40; index += 1) await state.appendEvents("r1", tick(index + 1));
    await state.close();
    expect(await readdir(directory)).toContain("snapshot.json");
    const reopened = await FileStateAdapter.open({ directory });
    expect((await reopened.listEvents("r1")).map((event) => event.seq)).toEqual(seqs(index + 1));
    await reopened.close();
  });

  describe("policy", () => {
    const folderBytes = async (directory: string) => {
      let total = 0;
      for (const name of await readdir(directory)) if (name === "snapshot.json" || name.endsWith(".wal")) total += (await stat(join(directory, name))).size;
      return total;
    };

    it("does not rewrite a state that only grows", async () => {
      const directory = await tempFolder();
      const state = await FileStateAdapter.open({ directory, compactAfterBytes: 4_000 });
      for (let run = 0; run < 40; run += 1) {
        await state.createRun(newRun(`r${run}`));
        await state.appendEvents(`r${run}`, tick(run));
      }
      await state.close();
      // Well past the threshold, but nearly all of it is live: folding would copy it all to drop little.
      expect(await folderBytes(directory)).toBeGreaterThan(8 * 4_000);
      expect(await readdir(directory)).not.toContain("snapshot.json");
      expect(await logsIn(directory)).toEqual(["log-0.wal"]);
    });

    it("folds a state whose records are replaced or deleted", async () => {
      const directory = await tempFolder();
      const state = await FileStateAdapter.open({ directory, compactAfterBytes: 4_000 });
      const note = (round: number) => `round ${round} `.padEnd(1_000, "n");
      // 200 KB of rewrites of one 1 KB record: folded, the folder stays a small part of that. Writes go on
      // into the next log while a fold runs in the background, so how far past the threshold it gets
      // depends on how fast the disk syncs the fold (about 12 KB seen on a loaded machine); unfolded it holds all 200 KB.
      for (let round = 0; round < 200; round += 1) await state.writeMemory("notes.md", note(round));
      await state.close();
      expect(await readdir(directory)).toContain("snapshot.json");
      expect(await folderBytes(directory)).toBeLessThan(200 * 1_000 / 5);

      // A deleted record counts at its own size: deleting a few large ones is enough to fold them away.
      const again = await FileStateAdapter.open({ directory, compactAfterBytes: 4_000 });
      for (let file = 0; file < 8; file += 1) await again.writeMemory(`big-${file}.md`, "b".repeat(20_000));
      const withBigFiles = await folderBytes(directory);
      for (let file = 0; file < 8; file += 1) await again.deleteMemory(`big-${file}.md`);
      await again.close();
      expect(await folderBytes(directory)).toBeLessThan(withBigFiles / 2);

      const reopened = await FileStateAdapter.open({ directory });
      expect((await reopened.readMemory("notes.md"))?.content).toBe(note(199));
      expect(await reopened.listMemory()).toEqual(["notes.md"]);
      await reopened.close();
    });

    it("refuses a share outside 0 to 1, naming the option", () => {
      for (const compactWhenSuperseded of [-0.1, 1.5, Number.NaN]) {
        expect(() => new FileStateAdapter({ directory: "/nonexistent", compactWhenSuperseded })).toThrow(
          expect.objectContaining({ code: "AL_ERR_STATE_CONFIG", message: expect.stringContaining("compactWhenSuperseded") }),
        );
      }
    });
  });
});

describe("StateTables snapshot", () => {
  it("keeps a run's record as it was at the cut while later writes patch it (the snapshot is written after)", () => {
    const tables = new StateTables();
    const at = "2026-01-01T00:00:00.000Z";
    const run = { id: "r1", agentId: "a", agentRevision: "rev", conversationId: null, status: "queued" as const, modelSpec: "m", input: { message: "hi", metadata: {} }, output: null, error: null, lastSeq: 1, observedSeq: 0, lease: null, createdAt: at, updatedAt: at };
    tables.apply({ op: "run.create", run, ordinal: 1, idempotencyKey: null, event: { id: "r1:1", runId: "r1", seq: 1, type: "run.created", data: {}, createdAt: at } });
    const snapshot = tables.toSnapshot();
    tables.apply({ op: "events.append", runId: "r1", events: [{ seq: 2, type: "later", data: {}, createdAt: at }] });
    tables.apply({ op: "run.patch", runId: "r1", set: { lastSeq: 2, status: "running", lease: { owner: "w", expiresAt: at, token: 1 } } });
    expect(snapshot.runs[0]!.record).toMatchObject({ lastSeq: 1, status: "queued", lease: null });
    expect(snapshot.runs[0]!.eventTexts).toHaveLength(1);
    expect(tables.runs.get("r1")!.record).toMatchObject({ lastSeq: 2, status: "running" });
    expect(tables.runs.get("r1")!.fence).toBe(1);
  });
});
