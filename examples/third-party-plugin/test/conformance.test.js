import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeStateConformance } from "@assemblyline-agents/core/testkit";
import { describe, expect, it } from "vitest";
import { JsonFileState } from "../src/index.js";

async function freshState() {
  const directory = await mkdtemp(join(tmpdir(), "jsonfile-state-"));
  const state = await JsonFileState.open({ file: join(directory, "state.json") });
  return { state, cleanup: async () => { await state.close(); await rm(directory, { recursive: true, force: true }); } };
}

describeStateConformance("JsonFileState", freshState, { facets: ["runs", "conversations", "usage"] });

describe("JsonFileState on disk", () => {
  it("finds runs and conversations again after a restart", async () => {
    const directory = await mkdtemp(join(tmpdir(), "jsonfile-state-"));
    const file = join(directory, "state.json");
    try {
      const first = await JsonFileState.open({ file });
      await first.createRun({ id: "run-1", agentId: "a", agentRevision: "r", modelSpec: "m", input: { message: "hi", metadata: {} } });
      await first.appendEvents("run-1", [{ type: "run.started" }], { run: { status: "running" } });
      await first.appendConversationMessages("c-1", [{ role: "user", content: "hi", runId: "run-1", createdAt: new Date().toISOString() }]);
      await first.close();

      const second = await JsonFileState.open({ file });
      expect(await second.getRun("run-1")).toMatchObject({ status: "running", lastSeq: 2 });
      expect((await second.listEvents("run-1")).map((event) => event.type)).toEqual(["run.created", "run.started"]);
      expect((await second.listConversationMessages("c-1")).map((message) => message.content)).toEqual(["hi"]);
      expect(JSON.parse(await readFile(file, "utf8")).format).toBe(1);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it("refuses a file some other program wrote", async () => {
    const directory = await mkdtemp(join(tmpdir(), "jsonfile-state-"));
    const file = join(directory, "state.json");
    try {
      await writeFile(file, JSON.stringify({ something: "else" }));
      await expect(JsonFileState.open({ file })).rejects.toMatchObject({ code: "AL_ERR_STATE_ROW_INVALID" });
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
