import type Docker from "dockerode";
import { afterAll, describe, expect, it } from "vitest";
import { DockerSandboxAdapter, LABELS } from "../src/index.js";
import { baseImages, probeEngine, randomScope, removeScope } from "./support/engine.js";
import { recordingLogger } from "./support/recording-logger.js";

const probe = await probeEngine("DockerSandboxAdapter snapshot images");
const text = (body: Uint8Array) => new TextDecoder().decode(body);

if (probe.available) {
  const { docker } = probe;
  const images = await baseImages(docker);
  const scopes: string[] = [];
  /** Images and containers a test made outside the adapter (a user's), removed after the suite. */
  const userImages: string[] = [];
  const userContainers: Docker.Container[] = [];
  const scoped = () => {
    const scope = randomScope("img");
    scopes.push(scope);
    return scope;
  };
  afterAll(async () => {
    for (const container of userContainers) await container.remove({ force: true }).catch(() => undefined);
    for (const reference of userImages) await docker.getImage(reference).remove().catch(() => undefined);
    for (const scope of scopes) await removeScope(docker, scope);
  });

  /** Every image on the engine that carries the scope's label, untagged ones included: what a session leaves on disk. */
  const imagesOfScope = async (scope: string) => (await docker.listImages({ all: true, filters: { label: [`${LABELS.scope}=${scope}`] } })).map((image) => ({ id: image.Id, tags: (image.RepoTags ?? []).filter((tag) => tag !== "<none>:<none>") }));
  const tagsOfKey = async (scope: string, key: string) =>
    (await docker.listImages({ all: true, filters: { label: [`${LABELS.scope}=${scope}`, `${LABELS.key}=${key}`] } })).flatMap((image) => (image.RepoTags ?? []).filter((tag) => tag.startsWith("assembly-line-snapshot/"))).sort();
  const tagOf = (adapterScope: string, key: string, id: string) => async () => (await tagsOfKey(adapterScope, key)).find((tag) => tag.endsWith(`:${id}`));

  describe("DockerSandboxAdapter snapshot images", () => {
    it("keeps the newest retainLast snapshots of a session and no other image; the one a restored container runs on stays until that container goes", async () => {
      const scope = scoped();
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, snapshot: { mode: "manual", retainLast: 2 }, docker, logger: recordingLogger() });
      const sandbox = await adapter.acquire("run-session");
      const taken = [];
      for (const version of ["v1", "v2", "v3", "v4"]) {
        await sandbox.writeFile("state.txt", version);
        taken.push((await adapter.snapshot("run-session")).id);
      }
      // Superseded snapshots are gone from the disk, not just untagged.
      let left = await imagesOfScope(scope);
      expect(left.flatMap((image) => image.tags).map((tag) => tag.split(":")[1]).sort()).toEqual([taken[2], taken[3]].sort());
      expect(left.every((image) => image.tags.length > 0)).toBe(true);

      // Restored from v3, the container runs on that image: two newer snapshots push it past retainLast, and it stays.
      const restored = await adapter.restore("run-session", taken[2]);
      for (const version of ["v5", "v6"]) {
        await restored.writeFile("state.txt", version);
        taken.push((await adapter.snapshot("run-session")).id);
      }
      left = await imagesOfScope(scope);
      expect(left.flatMap((image) => image.tags).map((tag) => tag.split(":")[1]).sort()).toEqual([taken[2], taken[4], taken[5]].sort());
      expect((await adapter.listSnapshots("run-session")).map((entry) => entry.id)).toEqual([taken[5], taken[4], taken[2]]);

      // Once that container is replaced, the cleanup removes v3 and, with it, nothing the newer ones need.
      const latest = await adapter.restore("run-session");
      expect(text(await latest.readFile("state.txt"))).toBe("v6");
      left = await imagesOfScope(scope);
      expect(left.flatMap((image) => image.tags).map((tag) => tag.split(":")[1]).sort()).toEqual([taken[4], taken[5]].sort());

      await adapter.release("run-session");
      expect(await imagesOfScope(scope)).toEqual([]);
      expect(await docker.listContainers({ all: true, filters: { label: [`${LABELS.scope}=${scope}`] } })).toEqual([]);
    }, 180_000);

    it("removes every snapshot of a released session, and keeps a paused run's newest snapshot for its resume after a restart", async () => {
      const scope = scoped();
      const policy = { mode: "manual", retainLast: 3 } as const;
      const before = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, snapshot: policy, docker, logger: recordingLogger() });
      for (const key of ["run-finished", "run-paused"]) {
        const sandbox = await before.acquire(key);
        await sandbox.writeFile("notes.md", `notes of ${key}, first`);
        await before.snapshot(key);
        await sandbox.writeFile("notes.md", `notes of ${key}, second`);
        await before.snapshot(key);
      }
      // The runtime releases a run's sandbox once the run has finished: nothing of it is left, and auto takes no snapshot at release.
      await before.release("run-finished");
      expect(await tagsOfKey(scope, "run-finished")).toEqual([]);
      expect(await before.listSnapshots("run-finished")).toEqual([]);
      expect(await tagsOfKey(scope, "run-paused")).toHaveLength(2);

      // The host restarts and the paused run's container is lost; another process releases a run it never opened.
      await docker.getContainer(before.containerName("run-paused")).remove({ force: true });
      const after = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, snapshot: policy, docker, logger: recordingLogger() });
      await after.release("run-never-opened");
      await after.release("run-finished");
      expect(await tagsOfKey(scope, "run-paused")).toHaveLength(2);
      // The resumed run gets its files back from the newest snapshot.
      expect(text(await (await after.acquire("run-paused")).readFile("notes.md"))).toBe("notes of run-paused, second");

      await after.release("run-paused");
      expect(await imagesOfScope(scope)).toEqual([]);
    }, 180_000);

    it("lists the keys it holds a container or, but under auto, snapshots for, in its own scope only, stopped containers too", async () => {
      const scope = scoped();
      const manual = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, snapshot: { mode: "manual" }, docker, logger: recordingLogger() });
      expect(await manual.listKeys()).toEqual([]);
      await manual.acquire("run-live");
      await manual.acquire("run-stopped");
      await docker.getContainer(manual.containerName("run-stopped")).stop({ t: 0 });
      // A crash between the container's removal and its snapshots': only snapshots are left.
      await manual.acquire("run-snapshots-left");
      await manual.snapshot("run-snapshots-left");
      await docker.getContainer(manual.containerName("run-snapshots-left")).remove({ force: true });
      const otherScope = scoped();
      await new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: otherScope, docker, logger: recordingLogger() }).acquire("run-of-another-scope");

      expect(await manual.listKeys()).toEqual(["run-live", "run-snapshots-left", "run-stopped"]);
      // auto keeps a released key's snapshots on purpose: only containers are listed.
      const auto = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, snapshot: { mode: "auto" }, docker, logger: recordingLogger() });
      expect(await auto.listKeys()).toEqual(["run-live", "run-stopped"]);

      await manual.release("run-snapshots-left");
      await manual.release("run-stopped");
      expect(await manual.listKeys()).toEqual(["run-live"]);
      expect(await tagsOfKey(scope, "run-snapshots-left")).toEqual([]);
    }, 180_000);

    it("never removes an image without the labels of a snapshot it took, and logs a snapshot a container still uses instead of failing the release", async () => {
      const scope = scoped();
      const logger = recordingLogger();
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, snapshot: { mode: "manual", retainLast: 1 }, docker, logger });
      const key = "run-shared-host";
      const sandbox = await adapter.acquire(key);
      await sandbox.writeFile("a.txt", "first");
      const first = (await adapter.snapshot(key)).id;
      const firstTag = (await tagOf(scope, key, first)())!;
      const repo = firstTag.slice(0, firstTag.lastIndexOf(":"));

      // A user keeps the first snapshot under a name of their own, and commits the sandbox container themselves.
      const kept = `assembly-line-test/user-kept:${scope}`;
      await docker.getImage(firstTag).tag({ repo: "assembly-line-test/user-kept", tag: scope });
      userImages.push(kept);
      const committed = `assembly-line-test/user-commit:${scope}`;
      await docker.getContainer(adapter.containerName(key)).commit({ repo: "assembly-line-test/user-commit", tag: scope, pause: false });
      userImages.push(committed);
      // ...and tags the base image into the snapshot repository under an old snapshot-like id.
      const stray = `${repo}:s0000000000001-000000`;
      await docker.getImage(images.busybox).tag({ repo, tag: "s0000000000001-000000" });
      userImages.push(stray);

      await sandbox.writeFile("a.txt", "second");
      const second = (await adapter.snapshot(key)).id;
      // The first snapshot's tag is pruned; the user's name for it keeps the image.
      expect(await tagOf(scope, key, first)()).toBeUndefined();
      expect((await docker.getImage(kept).inspect()).Id).toBeTruthy();

      // A user runs a container of their own from the second snapshot.
      const secondTag = (await tagOf(scope, key, second)())!;
      userImages.push(secondTag);
      const theirs = await docker.createContainer({ Image: secondTag, Entrypoint: ["/bin/sh", "-c"], Cmd: ["sleep 600"], HostConfig: { NetworkMode: "none" } });
      userContainers.push(theirs);
      await theirs.start();

      await expect(adapter.release(key)).resolves.toBeUndefined();
      // Left: the image their container runs on (logged), and every image without the snapshot labels.
      expect(await tagOf(scope, key, second)()).toBe(secondTag);
      for (const reference of [kept, committed, stray, images.busybox]) expect((await docker.getImage(reference).inspect()).Id, reference).toBeTruthy();
      const warnings = logger.entries.filter((entry) => entry.level === "warn");
      expect(warnings.map((entry) => entry.fields.image)).toEqual(expect.arrayContaining([secondTag, stray]));
      expect(warnings.find((entry) => entry.fields.image === secondTag)?.msg).toContain("a container still uses it");
      expect(await docker.listContainers({ all: true, filters: { label: [`${LABELS.scope}=${scope}`, `${LABELS.key}=${key}`], name: [adapter.containerName(key)] } })).toEqual([]);
    }, 180_000);
  });
}
