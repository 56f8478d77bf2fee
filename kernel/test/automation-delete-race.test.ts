import { describe, expect, it } from "vitest";
import { noopLogger, type RuntimeLogger, type ScheduleStateStore } from "@assemblyline-agents/core";
import { Automations, InMemoryStateAdapter, type AutomationManifestEntry } from "@assemblyline-agents/runtime";
import { sharedPostgres } from "./support/shared-postgres.js";

const postgres = await sharedPostgres("automation-delete-race");

const AGENT_ID = "agent";

/**
 * `store` as a host sees it, whose next schedule delete once `holdNextDelete` is called waits,
 * after the host read the row and decided, until the test releases it: the moment another
 * host's writes land in between.
 */
function withHeldDeletes(store: ScheduleStateStore) {
  let held: { reached: () => void; released: Promise<void> } | undefined;
  const seen = new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      if (property !== "deleteSchedule" && property !== "deleteScheduleIf") return value.bind(target);
      return async (...args: unknown[]) => {
        const hold = held;
        held = undefined;
        if (hold) {
          hold.reached();
          await hold.released;
        }
        return value.apply(target, args);
      };
    },
  });
  return {
    store: seen,
    /** The next delete waits: `reached` once the host is at it, `release()` to let it go on. */
    holdNextDelete() {
      let reached!: () => void;
      let release!: () => void;
      const atDelete = new Promise<void>((resolve) => (reached = resolve));
      held = { reached, released: new Promise<void>((resolve) => (release = resolve)) };
      return { reached: atDelete, release };
    },
  };
}

const hourly = (name: string, message: string): AutomationManifestEntry => ({
  name,
  source: { file: `automations/${name}.ts`, hash: message },
  schedule: { kind: "every", everyMs: 3_600_000 },
  message,
  conversationId: null,
  enabled: true,
});

/** One agent's automations on `store`, as one host runs them, with `statics` as its build's automations/. */
function host(store: ScheduleStateStore, statics: AutomationManifestEntry[] = [], logger: RuntimeLogger = noopLogger()): Automations {
  return new Automations({
    store,
    agentId: AGENT_ID,
    statics,
    logger,
    submit: async () => {
      throw new Error("no run is started by these tests");
    },
  });
}

function recordingLogger(): { logger: RuntimeLogger; warnings: Array<Record<string, unknown>> } {
  const warnings: Array<Record<string, unknown>> = [];
  return { logger: { ...noopLogger(), warn: (fields) => void warnings.push(fields) }, warnings };
}

/** Two hosts' views of one store: `a` through held deletes, `b` directly (PostgreSQL: each with its own connections). */
type Stores = () => Promise<{ a: ReturnType<typeof withHeldDeletes>; b: ScheduleStateStore }>;

const stores: Array<[string, Stores, boolean]> = [
  [
    "in memory",
    async () => {
      const state = new InMemoryStateAdapter();
      return { a: withHeldDeletes(state), b: state };
    },
    true,
  ],
  [
    "on PostgreSQL",
    async () => {
      const schema = postgres.schema("al_automation_delete");
      return { a: withHeldDeletes(await postgres.state(schema)), b: await postgres.state(schema) };
    },
    postgres.available,
  ],
];

for (const [where, makeStores, available] of stores) {
  describe.skipIf(!available)(`deleting an automation while another host writes it, ${where}`, () => {
    it("delete(name) leaves the automation another host created under the name after deleting the one read", async () => {
      const { a, b } = await makeStores();
      const [hostA, hostB] = [host(a.store), host(b)];
      await hostB.create({ name: "report", schedule: { every: 60_000 }, message: "the first" });
      const held = a.holdNextDelete();
      const deleting = hostA.delete("report");
      await held.reached;
      await hostB.delete("report");
      await hostB.create({ name: "report", schedule: { every: 60_000 }, message: "the second" });
      held.release();
      // The automation read was deleted by the other host: this call deleted none.
      expect(await deleting).toEqual({ deleted: false });
      expect(await hostB.get("report")).toMatchObject({ message: "the second" });
    });

    it("deleteInstance leaves the new creation of the name, and answers deleted: true", async () => {
      const { a, b } = await makeStores();
      const [hostA, hostB] = [host(a.store), host(b)];
      await hostB.create({ name: "report", schedule: { every: 60_000 }, message: "the first" });
      const instance = (await hostA.dynamicInstance("report"))!;
      const held = a.holdNextDelete();
      const deleting = hostA.deleteInstance("report", instance);
      await held.reached;
      await hostB.delete("report");
      await hostB.create({ name: "report", schedule: { every: 60_000 }, message: "the second" });
      held.release();
      expect(await deleting).toEqual({ deleted: true });
      expect(await hostB.get("report")).toMatchObject({ message: "the second" });
      expect(await hostB.dynamicInstance("report")).not.toBe(instance);
    });

    it("delete(name) still deletes the automation read when another host only changed it meanwhile", async () => {
      const { a, b } = await makeStores();
      const [hostA, hostB] = [host(a.store), host(b)];
      await hostB.create({ name: "report", schedule: { every: 60_000 }, message: "before" });
      const held = a.holdNextDelete();
      const deleting = hostA.delete("report");
      await held.reached;
      await hostB.update("report", { message: "after" });
      await hostB.setPaused("report", true);
      held.release();
      expect(await deleting).toEqual({ deleted: true });
      expect(await hostB.list()).toEqual([]);
    });

    it("the sync of automations/ leaves a static row another build wrote after the row it read to remove", async () => {
      const { a, b } = await makeStores();
      await host(b, [hourly("digest", "old words")]).syncStatic();
      // Host A's build removed automations/digest.ts; a host of a build that still has it syncs at the same moment.
      const held = a.holdNextDelete();
      const syncing = host(a.store, []).syncStatic();
      await held.reached;
      await host(b, [hourly("digest", "new words")]).syncStatic();
      held.release();
      await syncing;
      expect(await host(b).list()).toEqual([expect.objectContaining({ name: "digest", source: "static", message: "new words" })]);
    });

    it("the sync of a file taking a dynamic automation's name removes the automation as stored then, and logs that definition", async () => {
      const { a, b } = await makeStores();
      await host(b).create({ name: "digest", schedule: { every: 60_000 }, message: "before" });
      const { logger, warnings } = recordingLogger();
      const held = a.holdNextDelete();
      const syncing = host(a.store, [hourly("digest", "from the file")], logger).syncStatic();
      await held.reached;
      await host(b).update("digest", { message: "after" });
      held.release();
      await syncing;
      expect(await host(b).list()).toEqual([expect.objectContaining({ name: "digest", source: "static", message: "from the file" })]);
      expect(warnings).toEqual([expect.objectContaining({ event: "automation.name_taken_by_file", removed: expect.objectContaining({ message: "after" }) })]);
    });
  });
}

describe("deleting an automation that keeps changing under it", () => {
  /** A store where another writer changes every row between each read and delete: no conditional delete ever holds. */
  class AlwaysChanged extends InMemoryStateAdapter {
    deletes = 0;
    override async deleteScheduleIf(): Promise<boolean> {
      this.deletes += 1;
      return false;
    }
  }

  it("is given up after its tries with AL_ERR_AUTOMATION_CONFLICT, deleting nothing", async () => {
    const state = new AlwaysChanged();
    const automations = host(state);
    await automations.create({ name: "report", schedule: { every: 60_000 }, message: "stays" });
    await expect(automations.delete("report")).rejects.toMatchObject({
      code: "AL_ERR_AUTOMATION_CONFLICT",
      message: expect.stringContaining('automation "report" changed 8 times'),
    });
    expect(state.deletes).toBe(8);
    await expect(automations.deleteInstance("report", (await automations.dynamicInstance("report"))!)).rejects.toMatchObject({ code: "AL_ERR_AUTOMATION_CONFLICT" });
    expect(await automations.get("report")).toMatchObject({ message: "stays" });
  });

  it("is deleted by id on a store without deleteScheduleIf, as before it had one", async () => {
    const state = new InMemoryStateAdapter();
    const withoutDeleteIf = new Proxy(state, {
      get: (target, property) => (property === "deleteScheduleIf" ? undefined : (Reflect.get(target, property, target) as unknown)),
    }) as ScheduleStateStore;
    const automations = host(withoutDeleteIf);
    await automations.create({ name: "report", schedule: { every: 60_000 }, message: "goes" });
    expect(await automations.delete("report")).toEqual({ deleted: true });
    await automations.create({ name: "again", schedule: { every: 60_000 }, message: "goes" });
    expect(await automations.deleteInstance("again", (await automations.dynamicInstance("again"))!)).toEqual({ deleted: true });
    expect(await automations.list()).toEqual([]);
  });
});
