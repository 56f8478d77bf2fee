import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { isAssemblyLineError, type AssemblyLineError } from "@assemblyline-agents/core";
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { FileStateAdapter, type FileStateAdapterOptions } from "../src/index.js";
import { lineLimits } from "../src/state/line-limits.js";
import { logLine, readSnapshotRows, tempFolders } from "./support/state-folders.js";
import { collectWarnings, warningsDelivered } from "./support/process-warnings.js";

// Every line of a state folder is read back as one string, and Node.js makes none longer than 512 MiB:
// a longer line could be written but never read back. These tests lower the limits (lineLimits) to show
// with small data what the real sizes do: a record too large is refused before anything is written, a
// large run is folded into rows that each read back, and a fold that cannot be written keeps the logs.

const folders = tempFolders("al-file-state-line-limits-");
const opened: FileStateAdapter[] = [];
afterEach(async () => {
  for (const state of opened.splice(0)) await state.close();
  await folders.removeAll();
});

async function openState(options: FileStateAdapterOptions): Promise<FileStateAdapter> {
  const state = await FileStateAdapter.open(options);
  opened.push(state);
  return state;
}

/** Set `lineLimits` for this test only. */
function limitLines(limits: Partial<typeof lineLimits>): void {
  const before = { ...lineLimits };
  Object.assign(lineLimits, limits);
  onTestFinished(() => {
    Object.assign(lineLimits, before);
  });
}


const newRun = (id: string) => ({ id, agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } });
const at = "2030-01-01T00:00:00.000Z";
const toolCall = (index: number) => ({
  runId: "r1", callId: `c${index}`, toolName: "t", input: { text: "ünïcødé 🎉".repeat(20), index }, inputDigest: `d${index}`, status: "completed" as const,
  output: { index }, modelOutput: null, error: null, approvalId: null, question: null, createdAt: at, updatedAt: at,
});
const filesIn = async (directory: string) => (await readdir(directory)).filter((name) => name !== "LOCK").sort();

/** A run with many events, tool calls and steps and a large checkpoint, and a long conversation: more than a few rows of 2,000 characters each. */
async function writeLargeRunAndConversation(state: FileStateAdapter): Promise<void> {
  await state.createRun(newRun("r1"));
  for (let index = 0; index < 40; index += 1) {
    await state.appendEvents("r1", [{ type: "tick", data: { index, text: `"quotes" ünïcødé 🎉 ${"x".repeat(150)}` } }], {
      run: { status: "running" },
      toolCall: toolCall(index),
      step: { runId: "r1", key: `s${index}`, result: { index, list: [1, "two"] }, metadata: { n: index }, createdAt: at },
    });
  }
  await state.appendEvents("r1", [{ type: "paused", data: {} }], { checkpoint: { runId: "r1", continuation: { messages: ["m".repeat(3_000)] }, createdAt: at } });
  for (let index = 0; index < 30; index += 1) {
    await state.appendConversationMessages("conv-1", [{ role: "user", content: `message ${index} ${"y".repeat(200)}`, runId: "r1", createdAt: at }], { agentId: "agent" });
  }
}

async function readLargeRunAndConversation(state: FileStateAdapter) {
  return {
    run: await state.getRun("r1"),
    events: await state.listEvents("r1"),
    toolCalls: await state.listToolCalls("r1"),
    steps: await Promise.all(Array.from({ length: 40 }, (_, index) => state.getStep("r1", `s${index}`))),
    checkpoint: await state.getCheckpoint("r1"),
    conversation: await state.listConversationMessages("conv-1"),
  };
}

describe("FileStateAdapter line limits", () => {
  it("refuses a write whose record is over the limit, naming its size, the limit and the fix, and writes nothing", async () => {
    limitLines({ recordBytes: 10_000 });
    const directory = await folders.make();
    const state = await openState({ directory });
    await state.createRun(newRun("r1"));

    // 4,000 characters, but 12,000 bytes of UTF-8: the limit is in bytes, as the line is.
    const refused = await state.appendEvents("r1", [{ type: "big", data: { text: "日".repeat(4_000) } }], { run: { status: "running" } }).catch((error: unknown) => error);
    expect(isAssemblyLineError(refused, "AL_ERR_STATE_INPUT_INVALID")).toBe(true);
    const { message, fix } = refused as AssemblyLineError;
    expect(message).toMatch(/is too large: its record is 12\d{3} bytes of JSON \(UTF-8\), over the file state's limit of 10000 bytes for one write/);
    expect(message).toContain('events.append of run "r1"');
    expect(message).not.toContain("not JSON");
    expect(fix).toMatch(/blob storage or a file/);

    // Nothing of it was applied nor logged: the run is as it was, and the adapter goes on.
    expect((await state.listEvents("r1")).map((event) => event.type)).toEqual(["run.created"]);
    expect((await state.getRun("r1"))?.status).toBe("queued");
    await state.appendEvents("r1", [{ type: "small", data: { text: "ok" } }]);
    await state.close();
    expect(await readFile(join(directory, "log-0.wal"), "utf8")).not.toContain("日");
    const reopened = await openState({ directory });
    expect((await reopened.listEvents("r1")).map((event) => event.type)).toEqual(["run.created", "small"]);
  });

  it("folds a run and a conversation longer than a row into rows that each fit, and reads them back as they were", async () => {
    limitLines({ snapshotRowChars: 2_000 });
    const directory = await folders.make();
    const state = await openState({ directory });
    await writeLargeRunAndConversation(state);
    const before = await readLargeRunAndConversation(state);
    await state.close();
    // Folded on opening (compactWhenSuperseded 0: whenever the log outgrew the snapshot).
    await (await FileStateAdapter.open({ directory, compactAfterBytes: 1, compactWhenSuperseded: 0 })).close();
    expect(await filesIn(directory)).toEqual(["log-1.wal", "snapshot.json"]);

    const { header, tables } = await readSnapshotRows(directory);
    expect(header).toMatchObject({ format: 2, generation: 1 });
    for (const part of ["runEvents", "runToolCalls", "runSteps", "runCheckpoint", "conversationMessages"]) expect(tables[part], part).toBeDefined();
    const [run] = tables.runs!;
    expect(tables.runs).toHaveLength(1);
    expect(run.checkpoint).toBeNull();
    expect(tables.runCheckpoint).toEqual([{ runId: "r1", checkpoint: before.checkpoint }]);
    // Each line (JSON text) stays near the row size: the items it holds, and its frame.
    const lines = (await readFile(join(directory, "snapshot.json"), "utf8")).split("\n").slice(0, -1);
    const longest = Math.max(...lines.filter((line) => !line.includes('"runCheckpoint"')).map((line) => line.length));
    expect(longest).toBeLessThan(2_000 + 200);
    // The events, in order across the rows, are whole (id, run id, seq, type, data, time).
    const snapshotEvents = [...run.events, ...tables.runEvents!.flatMap((row: { events: unknown[] }) => row.events)];
    expect(snapshotEvents).toStrictEqual(before.events.map(({ id, runId, seq, type, data, createdAt }) => ({ id, runId, seq, type, data, createdAt })));

    const reopened = await openState({ directory });
    expect(await readLargeRunAndConversation(reopened)).toStrictEqual(before);
    // Appended after the fold, the run goes on at the next seq.
    await reopened.appendEvents("r1", [{ type: "after", data: {} }]);
    expect((await reopened.listEvents("r1", { afterSeq: before.events.length })).map((event) => [event.seq, event.type])).toEqual([[before.events.length + 1, "after"]]);
  });

  it("still opens a snapshot that holds a run and a conversation whole, one row each, as written before", async () => {
    limitLines({ snapshotRowChars: 2_000 });
    const directory = await folders.make();
    const events = Array.from({ length: 30 }, (_, index) => ({
      id: `r1:${index + 1}`, runId: "r1", seq: index + 1, type: index === 0 ? "run.created" : "tick", data: { index, text: "z".repeat(200) }, createdAt: at,
    }));
    const record = { ...newRun("r1"), conversationId: "conv-1", status: "running", output: null, error: null, lastSeq: 30, observedSeq: 0, lease: null, createdAt: at, updatedAt: at };
    const messages = Array.from({ length: 20 }, (_, index) => ({ role: "user", content: `old ${index} ${"w".repeat(200)}`, runId: "r1", createdAt: at, agentId: "agent" }));
    const rows = [
      ["runs", { events, toolCalls: [toolCall(1)], steps: [], record, ordinal: 1, checkpoint: null, deliveryIds: [], fence: 0 }],
      ["conversations", ["conv-1", messages]],
    ];
    await writeFile(join(directory, "snapshot.json"), [{ format: 2, generation: 3 }, ...rows, ["end", rows.length]].map((line) => logLine(line)).join(""));

    const state = await openState({ directory });
    expect(await state.listEvents("r1")).toStrictEqual(events);
    expect(await state.listToolCalls("r1")).toStrictEqual([toolCall(1)]);
    expect(await state.listConversationMessages("conv-1")).toStrictEqual(messages);
    expect((await state.getRun("r1"))?.lastSeq).toBe(30);
    await state.close();
  });

  it("abandons a fold whose snapshot line would be too long to read back: the logs stay, a warning says why, and the folder reopens whole", async () => {
    limitLines({ snapshotLineBytes: 4_000 });
    const warnings = collectWarnings();
    const directory = await folders.make();
    const state = await openState({ directory, compactAfterBytes: 2_000, compactWhenSuperseded: 0 });
    await state.createRun(newRun("r1"));
    // One memory file is one row, and cannot be split: its line would be over 4,000 bytes.
    await state.writeMemory("notes/big.md", "b".repeat(6_000));
    await state.writeMemory("notes/small.md", "small");
    await state.close();
    await warningsDelivered();

    expect(warnings).toHaveLength(1);
    expect(isAssemblyLineError(warnings[0], "AL_ERR_STATE_COMPACTION")).toBe(true);
    expect(warnings[0]!.message).toMatch(/could not be folded into a new snapshot: a row of table memory makes a snapshot line of 60\d\d bytes, over the 4000 that read back as one string/);
    expect((warnings[0] as AssemblyLineError).fix).toMatch(/Nothing was lost/);
    // No snapshot replaced the logs, and nothing was removed.
    expect(await filesIn(directory)).toEqual(["log-0.wal", "log-1.wal"]);

    lineLimits.snapshotLineBytes = 1_000_000;
    const reopened = await openState({ directory });
    expect((await reopened.readMemory("notes/big.md"))?.content).toBe("b".repeat(6_000));
    expect((await reopened.readMemory("notes/small.md"))?.content).toBe("small");
    expect((await reopened.listEvents("r1")).map((event) => event.type)).toEqual(["run.created"]);
    // Opening it folded what the failed fold left, now that its lines fit.
    expect(await filesIn(directory)).toEqual(["log-2.wal", "snapshot.json"]);
  });

  it("puts the next fold off after a failed one, and an opening that cannot fold begins no new log", async () => {
    limitLines({ snapshotLineBytes: 4_000 });
    const warnings = collectWarnings();
    const directory = await folders.make();
    const state = await openState({ directory, compactAfterBytes: 2_000, compactWhenSuperseded: 0 });
    await state.writeMemory("notes/big.md", "b".repeat(6_000));
    await state.close();
    await warningsDelivered();
    expect(warnings).toHaveLength(1);
    expect(await filesIn(directory)).toEqual(["log-0.wal", "log-1.wal"]);

    // Each opening tries the fold again, and says so, but leaves no log behind for it.
    for (let attempt = 0; attempt < 3; attempt += 1) await (await FileStateAdapter.open({ directory, compactAfterBytes: 2_000, compactWhenSuperseded: 0 })).close();
    await warningsDelivered();
    expect(warnings).toHaveLength(4);
    expect(await filesIn(directory)).toEqual(["log-0.wal", "log-1.wal"]);

    // While open, writes that grow the log by less than the failed fold would have folded try no fold.
    const writing = await openState({ directory, compactAfterBytes: 2_000, compactWhenSuperseded: 0 });
    await warningsDelivered();
    expect(warnings).toHaveLength(5);
    for (let index = 0; index < 10; index += 1) await writing.putSetting(`k${index}`, "v".repeat(200), { actor: "t" });
    await warningsDelivered();
    expect(warnings).toHaveLength(5);
    expect(await filesIn(directory)).toEqual(["log-0.wal", "log-1.wal"]);
    // Once it grew by as much, the fold is tried once more (and fails once more).
    for (let index = 10; index < 40; index += 1) await writing.putSetting(`k${index}`, "v".repeat(200), { actor: "t" });
    await writing.close();
    await warningsDelivered();
    expect(warnings).toHaveLength(6);
    expect(await filesIn(directory)).toEqual(["log-0.wal", "log-1.wal", "log-2.wal"]);

    const reopened = await openState({ directory });
    expect((await reopened.readMemory("notes/big.md"))?.content).toBe("b".repeat(6_000));
    expect(await reopened.getSetting("k39")).toBe("v".repeat(200));
  });
});
