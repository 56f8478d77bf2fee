import { isAssemblyLineError } from "@assemblyline-agents/core";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { FileStateAdapter } from "../src/index.js";
import { tempFolders } from "./support/state-folders.js";

/*
 * A worker thread has a globalThis of its own, so it does not share the main thread's random id
 * for LOCK files: it must still tell, by the pid's start time, that the LOCK naming its pid is
 * its own process's, and not one of an earlier process that had this pid.
 */

const folders = tempFolders("al-folder-lock-worker-");
const adapters: FileStateAdapter[] = [];
afterEach(async () => {
  await Promise.all(adapters.splice(0).map((adapter) => adapter.close().catch(() => undefined)));
  await folders.removeAll();
});

const run = (id: string) => ({ id, agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: id, metadata: {} } });

/** The built package, as a worker thread loads it. */
const packageEntry = new URL("../dist/index.js", import.meta.url).href;

/** Open `directory` on a worker thread of this process, then close it: "opened", or the code of the error. */
function openOnWorkerThread(directory: string): Promise<string> {
  const source = `
    const { parentPort, workerData } = require("node:worker_threads");
    import(workerData.packageEntry).then(async ({ FileStateAdapter }) => {
      try {
        const state = await FileStateAdapter.open({ directory: workerData.directory });
        await state.close();
        parentPort.postMessage("opened");
      } catch (error) {
        parentPort.postMessage(String(error?.code ?? error));
      }
    });
  `;
  return new Promise((resolve, reject) => {
    const worker = new Worker(source, { eval: true, workerData: { directory, packageEntry } });
    worker.once("message", (message) => {
      resolve(String(message));
      void worker.terminate();
    });
    worker.once("error", reject);
  });
}

describe.skipIf(process.platform !== "linux")("a second FileStateAdapter on a worker thread of the holder's process", () => {
  it("is refused, and the holder keeps its lock and goes on writing", async () => {
    const directory = await folders.make();
    const holder = await FileStateAdapter.open({ directory });
    adapters.push(holder);
    await holder.createRun(run("r1"));
    const lockBefore = JSON.parse(await readFile(join(directory, "LOCK"), "utf8")) as { token: string };

    expect(await openOnWorkerThread(directory)).toBe("AL_ERR_STATE_LOCKED");

    const written = await holder.createRun(run("r2")).then(
      () => "written",
      (error: unknown) => (isAssemblyLineError(error) ? `${error.code}: ${error.message}` : String(error)),
    );
    expect(written).toBe("written");
    const lockAfter = await readFile(join(directory, "LOCK"), "utf8").then(
      (text) => JSON.parse(text) as { token: string },
      () => undefined,
    );
    expect(lockAfter?.token, "the worker's close removed the holder's LOCK").toBe(lockBefore.token);
  });
});
