import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { RunListFilter, RunRecord, RunStatus, StateAdapter } from "@assemblyline-agents/core";
import { FileStateAdapter } from "@assemblyline-agents/local";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";

const folders: string[] = [];
/** File states a test opened, closed after it even when it fails. */
const opened: FileStateAdapter[] = [];
afterEach(async () => {
  for (const state of opened.splice(0)) await state.close();
});
afterAll(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});
const folder = () => {
  const made = mkdtempSync(join(tmpdir(), "al-run-pages-"));
  folders.push(made);
  return made;
};

/** 23 runs over two agents and three conversations; every fifth one completed afterwards, every seventh failed. */
async function seed(state: StateAdapter): Promise<void> {
  for (let index = 0; index < 23; index += 1) {
    const id = `run_${String(index).padStart(2, "0")}`;
    await state.createRun({
      id,
      agentId: index % 3 === 0 ? "other" : "notes",
      agentRevision: "rev",
      modelSpec: "test/model",
      input: { message: `message ${index}` },
      ...(index % 4 === 0 ? {} : { conversationId: `c${index % 3}` }),
    });
    if (index % 5 === 0) await state.appendEvents(id, [{ type: "run.completed", data: {} }], { run: { status: "completed" } });
    else if (index % 7 === 0) await state.appendEvents(id, [{ type: "run.failed", data: {} }], { run: { status: "failed" } });
  }
}

/** What listRuns must answer for `filter`: the matching runs, newest first. */
function expected(all: RunRecord[], filter: RunListFilter): string[] {
  const statuses = filter.status === undefined ? undefined : new Set<RunStatus>([filter.status].flat());
  return all
    .filter((run) => statuses === undefined || statuses.has(run.status))
    .filter((run) => filter.agentId === undefined || run.agentId === filter.agentId)
    .filter((run) => filter.conversationId === undefined || run.conversationId === filter.conversationId)
    .map((run) => run.id)
    .sort()
    .reverse();
}

/** Every page of `filter`, following nextCursor; the ids of each. */
async function pages(state: StateAdapter, filter: RunListFilter): Promise<string[][]> {
  const found: string[][] = [];
  let cursor: string | undefined;
  do {
    const page = await state.listRuns({ ...filter, ...(cursor ? { cursor } : {}) });
    found.push(page.runs.map((run) => run.id));
    cursor = page.nextCursor ?? undefined;
    if (found.length > 30) throw new Error("listRuns kept answering a next page");
  } while (cursor);
  return found;
}

const FILTERS: RunListFilter[] = [
  {},
  { limit: 4 },
  { limit: 1 },
  { status: "queued", limit: 3 },
  { status: ["completed", "failed"], limit: 2 },
  { agentId: "notes", limit: 5 },
  { conversationId: "c1", limit: 2 },
  { agentId: "other", status: "completed" },
  { status: "running" },
];

async function expectPagesOf(state: StateAdapter): Promise<void> {
  const all = (await state.listRuns({ limit: 1000 })).runs;
  expect(all).toHaveLength(23);
  for (const filter of FILTERS) {
    const found = await pages(state, filter);
    const limit = filter.limit ?? 50;
    // Newest first, every match once, each page full but the last, and no empty page after a full one.
    expect(found.flat(), JSON.stringify(filter)).toEqual(expected(all, filter));
    for (const page of found.slice(0, -1)) expect(page).toHaveLength(limit);
    expect(found.at(-1)!.length).toBeLessThanOrEqual(limit);
    if (found.length > 1) expect(found.at(-1)!.length).toBeGreaterThan(0);
  }
}

describe.each([
  ["in-memory", async () => ({ state: new InMemoryStateAdapter() as StateAdapter })],
  [
    "file",
    async () => {
      const state = await FileStateAdapter.open({ directory: folder() });
      opened.push(state);
      return { state: state as StateAdapter };
    },
  ],
])("listRuns on the %s state", (_name, make) => {
  it("pages every filter newest first, each run once, following nextCursor to the end", async () => {
    const { state } = await make();
    await seed(state);
    await expectPagesOf(state);
  });

  it("filters on the status a run has now, not the one it was created with", async () => {
    const { state } = await make();
    await seed(state);
    await state.appendEvents("run_22", [{ type: "run.completed", data: {} }], { run: { status: "completed" } });
    const completed = (await state.listRuns({ status: "completed" })).runs.map((run) => run.id);
    expect(completed[0]).toBe("run_22");
    expect((await state.listRuns({ status: "queued" })).runs.map((run) => run.id)).not.toContain("run_22");
  });

  it("ends with the page that holds the oldest run and no cursor, and refuses a cursor it did not make", async () => {
    const { state } = await make();
    await seed(state);
    const last = (await pages(state, { limit: 23 })).at(-1)!;
    expect(last).toHaveLength(23);
    const oldest = await state.listRuns({ limit: 22 });
    const after = await state.listRuns({ limit: 22, cursor: oldest.nextCursor! });
    expect(after).toEqual({ runs: [expect.objectContaining({ id: "run_00" })], nextCursor: null });
    await expect(state.listRuns({ cursor: "not-ours" })).rejects.toMatchObject({ code: "AL_ERR_STATE_INPUT_INVALID" });
  });
});

describe("listRuns on the file state, opened again", () => {
  it("pages the same from its log and from a snapshot", async () => {
    const directory = folder();
    /** Open the folder; the state is closed at once after `use`, or after the test if `use` fails. */
    const withState = async (use: (state: FileStateAdapter) => Promise<void>, options = {}) => {
      const state = await FileStateAdapter.open({ directory, ...options });
      opened.push(state);
      await use(state);
      opened.splice(opened.indexOf(state), 1);
      await state.close();
    };
    await withState(seed);
    // Replayed from the log.
    await withState(expectPagesOf);
    // Folded into a snapshot on open (any log outgrows 1 byte; nothing superseded is asked for), then read from it.
    await withState(async () => undefined, { compactAfterBytes: 1, compactWhenSuperseded: 0 });
    expect(existsSync(join(directory, "snapshot.json"))).toBe(true);
    await withState(expectPagesOf);
  });
});
