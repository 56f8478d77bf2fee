import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { MAX_TIMER_MS, adapterDescriptor, defineGateway, definePlugin } from "@assemblyline-agents/core";
import { createKernel, materializeGateway } from "@assemblyline-agents/runtime";
import { composeGateway, conformanceSubjectFactory, loadPluginPackage, verifyPluginPackage } from "@assemblyline-agents/registry";

const root = resolve(import.meta.dirname, "../..");
const thirdParty = join(root, "examples/third-party-plugin");

const folders: string[] = [];
afterEach(async () => {
  await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
});

/** Values no timer waits for: each would end every plugin call's wait at once. */
const UNUSABLE = [0, -1, Number.NaN, Number.POSITIVE_INFINITY, MAX_TIMER_MS + 1];
const says = (owner: string, value: number) => new RegExp(`^${owner}: timeoutMs is ${String(value)}; give a number of milliseconds above 0 and at most ${MAX_TIMER_MS} .*default 10000`);

describe("the timeoutMs bounding plugin calls", () => {
  it("is refused by createKernel and materializeGateway when no timer can wait for it, before any plugin is applied", async () => {
    let applied = 0;
    const plugin = definePlugin({ name: "counted", version: "1.0.0", apply: () => void (applied += 1) });
    for (const timeoutMs of UNUSABLE) {
      await expect(createKernel({ plugins: [plugin], timeoutMs }), String(timeoutMs)).rejects.toThrow(says("createKernel", timeoutMs));
    }
    expect(applied).toBe(0);
    const kernel = await createKernel({ plugins: [plugin], timeoutMs: MAX_TIMER_MS });
    expect(applied).toBe(1);
    const agentDir = await mkdtemp(join(tmpdir(), "al-timeout-"));
    folders.push(agentDir);
    for (const timeoutMs of UNUSABLE) {
      await expect(materializeGateway(kernel, defineGateway({}), { env: {}, devMode: false, agentDir }, { timeoutMs }), String(timeoutMs)).rejects.toThrow(says("materializeGateway", timeoutMs));
    }
  });

  it("is refused by composeGateway, loadPluginPackage, verifyPluginPackage and conformanceSubjectFactory alike, 0 included", async () => {
    const agentDir = await mkdtemp(join(tmpdir(), "al-timeout-"));
    folders.push(agentDir);
    const gateway = defineGateway({ state: adapterDescriptor("state", "jsonfile", {}) });
    for (const timeoutMs of UNUSABLE) {
      await expect(composeGateway({ gateway, agentDir, plugins: [thirdParty], timeoutMs }), String(timeoutMs)).rejects.toThrow(says("composeGateway", timeoutMs));
      await expect(loadPluginPackage(thirdParty, { timeoutMs }), String(timeoutMs)).rejects.toThrow(says("loadPluginPackage", timeoutMs));
      // verify used to read 0 as "the default"; it is refused like everywhere else.
      await expect(verifyPluginPackage(thirdParty, { timeoutMs }), String(timeoutMs)).rejects.toThrow(says("verifyPluginPackage", timeoutMs));
      expect(() => conformanceSubjectFactory({ packageDir: thirdParty, slot: "state", timeoutMs }), String(timeoutMs)).toThrow(says("conformanceSubjectFactory", timeoutMs));
    }
    const composed = await composeGateway({ gateway, agentDir, plugins: [thirdParty], timeoutMs: 5_000 });
    onTestFinished(() => composed.close());
    expect(composed.slots.map((slot) => slot.plugin.manifest.id)).toEqual(["jsonfile"]);
  });
});
