import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type Docker from "dockerode";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEPLOY_IMAGE_LABELS, DEPLOY_LABEL, DockerDeployTarget, type DockerDeployOptions, type DockerDeployResult } from "../src/index.js";
import { baseImages, probeEngine } from "./support/engine.js";
import { recordingLogger } from "./support/recording-logger.js";

const probe = await probeEngine("dockerDeploy release images");
const REPO = resolve(import.meta.dirname, "../../..");

if (probe.available) {
  const { docker } = probe;
  const suffix = randomBytes(4).toString("hex");
  const name = `al-images-${suffix}`;
  // Base images under names of this suite's own, so the runtime images built on them are this suite's too.
  const baseRepo = "assembly-line-test/deploy-base";
  const bases = [`${baseRepo}:${suffix}-a`, `${baseRepo}:${suffix}-b`];
  const logger = recordingLogger();
  const engineHasBridge = (await docker.listNetworks({ filters: { driver: ["bridge"] } })).length > 0;
  const userContainers: Docker.Container[] = [];
  let root: string;
  let agentDir: string;
  let edits = 0;

  beforeAll(async () => {
    const images = await baseImages(docker);
    for (const base of bases) await docker.getImage(images.node).tag({ repo: baseRepo, tag: base.slice(baseRepo.length + 1) });
    root = mkdtempSync(join(tmpdir(), "al-deploy-images-"));
    agentDir = join(root, "agent");
    mkdirSync(join(agentDir, "conversations"), { recursive: true });
    writeFileSync(join(agentDir, "package.json"), JSON.stringify({ name: "deploy-images-agent", private: true, type: "module" }));
    writeFileSync(join(agentDir, "conversations/hello.json"), JSON.stringify({ turns: [{ text: "Hello from the release." }] }));
    // Outside the repo, but resolving the workspace's packages, as an installed agent would.
    symlinkSync(join(REPO, "node_modules"), join(root, "node_modules"));
  }, 300_000);

  afterAll(async () => {
    for (const container of userContainers) await container.remove({ force: true }).catch(() => undefined);
    for (const info of await docker.listContainers({ all: true, filters: { label: [`${DEPLOY_LABEL}=${name}`] } })) {
      await docker.getContainer(info.Id).remove({ force: true }).catch(() => undefined);
    }
    for (const image of await docker.listImages({ filters: { reference: [`${name}:*`] } })) {
      for (const tag of image.RepoTags ?? []) await docker.getImage(tag).remove().catch(() => undefined);
    }
    for (const base of bases) {
      for (const image of await docker.listImages({ filters: { label: [`${DEPLOY_IMAGE_LABELS.base}=${base}`, `${DEPLOY_IMAGE_LABELS.kind}=runtime`] } })) {
        for (const tag of image.RepoTags ?? []) await docker.getImage(tag).remove().catch(() => undefined);
      }
      await docker.getImage(base).remove().catch(() => undefined);
    }
    // The agent keeps its runs in the default file state: its releases shared this volume.
    await docker.getVolume(`assembly-line-${name}-state`).remove().catch(() => undefined);
    if (root) rmSync(root, { recursive: true, force: true });
  }, 180_000);

  /** A new revision of the agent (its instructions change), built as `assembly-line build` does. */
  const newRevision = () => {
    edits += 1;
    writeFileSync(join(agentDir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\n\nexport default defineAgent({\n  id: "deploy-images-agent",\n  model: "scripted:conversations/hello.json",\n  instructions: "Say hello (edit ${edits}).",\n});\n`);
    const built = spawnSync(process.execPath, [join(REPO, "plugins/node/bin/assembly-line.js"), "build", agentDir], { encoding: "utf8" });
    if (built.status !== 0) throw new Error(`assembly-line build failed: ${built.stderr}${built.stdout}`);
  };
  /** The runtime image each release was built on (a change to the runtime packages' files makes a new one). */
  const runtimes = new Map<string, string>();
  const deploy = async (base: string, extra: DockerDeployOptions = {}): Promise<DockerDeployResult> => {
    newRevision();
    const target = new DockerDeployTarget({ name, baseImage: base, network: "host", include: ["conversations"], readyTimeoutMs: 240_000, keepReleases: 2, ...extra }, docker, logger);
    const result = await target.deploy({ artifactRoot: join(agentDir, ".assembly-line"), env: {} });
    runtimes.set(result.image, (await docker.getImage(result.image).inspect()).Config.Labels[DEPLOY_IMAGE_LABELS.runtime]!);
    return result;
  };
  /** Every tag of the suite's name on the engine: releases and the images a user put there. */
  const tagsOfName = async () => (await docker.listImages({ filters: { reference: [`${name}:*`] } })).flatMap((image) => image.RepoTags ?? []).sort();
  const exists = (reference: string) =>
    docker
      .getImage(reference)
      .inspect()
      .then(
        () => true,
        () => false,
      );

  describe("dockerDeploy release images", () => {
    it("keeps the last keepReleases release images and any a running container uses, removes the rest with the runtime images only they used, and never an image without its labels", async () => {
      const first = await deploy(bases[0]!);
      expect(first.removedImages).toEqual([]);
      const r1 = first.image;

      // A user runs a container of their own from the first release, commits it, and tags another image into the release repository.
      const theirs = await docker.createContainer({ Image: r1, Entrypoint: ["/bin/sh", "-c"], Cmd: ["sleep 900"], HostConfig: { NetworkMode: "none" } });
      userContainers.push(theirs);
      await theirs.start();
      const child = `${name}:user-child`;
      await theirs.commit({ repo: name, tag: "user-child", pause: false });
      const unlabelled = `${name}:user-made`;
      await docker.getImage((await baseImages(docker)).busybox).tag({ repo: name, tag: "user-made" });

      const r2 = (await deploy(bases[0]!)).image;
      const thirdResult = await deploy(bases[0]!);
      const r3 = thirdResult.image;
      // Three releases with keepReleases 2: the first stays, as a running container uses it.
      expect(thirdResult.removedImages).toEqual([]);
      expect(await tagsOfName()).toEqual([r1, r2, r3, child, unlabelled].sort());

      // A release that never gets ready leaves no image, and takes nothing of the others.
      const failed = await deploy(bases[0]!, { readyTimeoutMs: 1 }).catch((error: unknown) => error);
      expect(isAssemblyLineError(failed, "AL_ERR_DEPLOY_UNHEALTHY"), String(failed)).toBe(true);
      expect(await tagsOfName()).toEqual([r1, r2, r3, child, unlabelled].sort());

      // Stopped, their container still holds the first release: its removal is logged and left, and the deploy succeeds.
      await theirs.stop({ t: 0 });
      const fourthResult = await deploy(bases[1]!);
      const r4 = fourthResult.image;
      expect(await tagsOfName()).toEqual([r1, r3, r4, child, unlabelled].sort());
      const left = logger.entries.find((entry) => entry.level === "warn" && entry.fields.image === r1);
      expect(left?.msg).toContain("a container still uses it");
      // The second release's runtime image goes with it unless a release left is built on it too.
      const runtimeOfSecond = runtimes.get(r2)!;
      const shared = [r1, r3].some((release) => runtimes.get(release) === runtimeOfSecond);
      expect(fourthResult.removedImages).toEqual(shared ? [r2] : [r2, runtimeOfSecond]);
      expect(await exists(runtimeOfSecond)).toBe(shared);
      for (const release of [r1, r3, r4]) expect(await exists(runtimes.get(release)!), release).toBe(true);

      // The user removes their container and their image: the next deploy removes the first release, and the runtime image nothing is built on any more.
      await theirs.remove({ force: true });
      await docker.getImage(child).remove();
      const fifthResult = await deploy(bases[1]!);
      const r5 = fifthResult.image;
      expect(await tagsOfName()).toEqual([r4, r5, unlabelled].sort());
      // Built on the other base, the releases left share no runtime image with the removed ones.
      const orphaned = [...new Set([runtimes.get(r1)!, runtimes.get(r3)!])];
      expect(fifthResult.removedImages.sort()).toEqual([r1, r3, ...orphaned].sort());
      for (const runtime of orphaned) expect(await exists(runtime), runtime).toBe(false);
      for (const release of [r4, r5]) expect(await exists(runtimes.get(release)!), release).toBe(true);
      // The serving release is the newest, and its container is the only one of the name.
      const releases = await docker.listContainers({ all: true, filters: { label: [`${DEPLOY_LABEL}=${name}`] } });
      expect(releases.map((info) => info.Names[0])).toEqual([`/${fifthResult.id}`]);
    }, 1_200_000);

    // The CI's engine runs without its default bridge (dockerd --bridge=none), as many locked-down engines do.
    it.skipIf(engineHasBridge)("refuses at once a release on a network that publishes no port, and the serving release stays", async () => {
      const serving = (await docker.listContainers({ filters: { label: [`${DEPLOY_LABEL}=${name}`] } })).map((info) => info.Id);
      const failed = await deploy(bases[1]!, { network: "bridge", readyTimeoutMs: 120_000 }).catch((error: unknown) => error);
      expect(isAssemblyLineError(failed, "AL_ERR_DEPLOY_CONFIG"), String(failed)).toBe(true);
      expect(String((failed as Error).message)).toContain("published no host port");
      expect((await docker.listContainers({ filters: { label: [`${DEPLOY_LABEL}=${name}`] } })).map((info) => info.Id)).toEqual(serving);
    }, 300_000);
  });
}
