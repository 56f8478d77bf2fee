import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunListFilter, RunRecord, RunStatus, StateAdapter } from "@assemblyline-agents/core";
import type { FileStateAdapter } from "@assemblyline-agents/local";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { useFileStates } from "./support/file-states.js";

const fileStates = useFileStates("al-run-pages-");

/**
 * 23 runs over two agents and three conversations, some created running or waiting for an approval;
 * every fifth one completed afterwards, every seventh failed.
 */
async function seed(state: StateAdapter): Promise<void> {
  for (let index = 0; index < 23; index += 1) {
    const id = `run_${String(index).padStart(2, "0")}`;
    await state.createRun({
      id,
      agentId: index % 3 === 0 ? "other" : "notes",
      agentRevision: "rev",
      modelSpec: "test/model",
      input: { message: `message ${index}`, metadata: {} },
      ...(index % 4 === 0 ? {} : { conversationId: `c${index % 3}` }),
      ...(index % 6 === 1 ? { status: "running" as const } : index % 6 === 3 ? { status: "waiting_approval" as const } : {}),
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
  { status: ["queued", "running", "waiting_approval", "waiting_input"], limit: 4 },
  { status: "waiting_approval", agentId: "notes" },
  { status: ["running", "completed"], limit: 3 },
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

/** Recovery claims lease the oldest queued and running runs with no live lease, up to their limit, each once. */
async function expectClaimsOf(state: StateAdapter): Promise<void> {
  const all = (await state.listRuns({ limit: 1000 })).runs;
  const recoverable = all
    .filter((run) => run.status === "queued" || run.status === "running")
    .map((run) => run.id)
    .sort();
  expect(recoverable.length).toBeGreaterThan(6);
  const at = new Date("2030-01-01T00:00:00.000Z");
  const claim = async (owner: string, limit: number) =>
    (await state.claimRecoverableRuns({ owner, ttlMs: 60_000, limit, now: at })).map((run) => run.id);
  expect(await claim("first", 3)).toEqual(recoverable.slice(0, 3));
  expect(await claim("second", 100)).toEqual(recoverable.slice(3));
  expect(await claim("third", 100)).toEqual([]);
  expect((await state.getRun(recoverable[0]!))?.lease?.owner).toBe("first");
}

describe.each([
  ["in-memory", async () => ({ state: new InMemoryStateAdapter() as StateAdapter })],
  [
    "file",
    async () => ({ state: (await fileStates.open(fileStates.folder())) as StateAdapter }),
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

  it("claims for recovery the oldest queued and running runs that no one holds, up to the limit", async () => {
    const { state } = await make();
    await seed(state);
    await expectClaimsOf(state);
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
  it("pages and claims the same from its log and from a snapshot", async () => {
    const directory = fileStates.folder();
    /** Open the folder; the state is closed at once after `use`, or after the test if `use` fails. */
    const withState = async (use: (state: FileStateAdapter) => Promise<void>, options = {}) => {
      const state = await fileStates.open(directory, options);
      await use(state);
      await fileStates.close(state);
    };
    await withState(seed);
    // Replayed from the log.
    await withState(expectPagesOf);
    // Folded into a snapshot on open (any log outgrows 1 byte; nothing superseded is asked for), then read from it.
    await withState(async () => undefined, { compactAfterBytes: 1, compactWhenSuperseded: 0 });
    expect(existsSync(join(directory, "snapshot.json"))).toBe(true);
    await withState(async (state) => {
      await expectPagesOf(state);
      await expectClaimsOf(state);
    });
  });
});
