import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { describe, expect, it, onTestFinished } from "vitest";
import { FileStateAdapter } from "../src/index.js";

describe("file state AL_ERR_RUN_NOT_FOUND", () => {
  it("names the run in its message and keeps the state's folder, which HTTP callers of a host must not learn, in details only", async () => {
    const directory = mkdtempSync(join(tmpdir(), "al-run-missing-"));
    onTestFinished(() => rmSync(directory, { recursive: true, force: true }));
    const state = await FileStateAdapter.open({ directory });
    onTestFinished(() => state.close());
    const error = await state.appendEvents("run_missing", [{ type: "a" }]).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(isAssemblyLineError(error) && error.code).toBe("AL_ERR_RUN_NOT_FOUND");
    const { message, details } = error as { message: string; details: Record<string, unknown> };
    expect(message).toContain('no run with id "run_missing"');
    expect(message).not.toContain(directory);
    expect(details).toMatchObject({ runId: "run_missing", directory });
  });
});
