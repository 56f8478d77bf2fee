import { randomBytes } from "node:crypto";
import Docker from "dockerode";
import { LABELS } from "../../src/index.js";
// @ts-expect-error: a plain .mjs script, also run by .ci/services/docker.sh
import { IMAGE_MARKER, ensureBaseImages } from "./base-images.mjs";

export { IMAGE_MARKER };

export type EngineProbe = { available: true; docker: Docker } | { available: false };

/** Whether a Docker engine answers; in CI its absence fails the suite instead of skipping it. */
export async function probeEngine(suite: string): Promise<EngineProbe> {
  const docker = new Docker();
  try {
    await docker.ping();
    return { available: true, docker };
  } catch (error) {
    const reason = `no Docker engine answers (${error instanceof Error ? error.message : String(error)})`;
    if (process.env.CI) throw new Error(`${suite}: ${reason}; CI requires it (.ci/services/docker.sh starts one)`);
    console.log(`skipping ${suite}: ${reason}; start dockerd to run it`);
    return { available: false };
  }
}

/** The locally imported base images (busybox; busybox + node), imported once and reused by content hash. */
export function baseImages(docker: Docker): Promise<{ busybox: string; node: string }> {
  return ensureBaseImages(docker) as Promise<{ busybox: string; node: string }>;
}

export function randomScope(prefix = "t"): string {
  return `${prefix}-${randomBytes(5).toString("hex")}`;
}

/** Remove every container and snapshot image a test scope left behind. */
export async function removeScope(docker: Docker, scope: string): Promise<void> {
  const containers = await docker.listContainers({ all: true, filters: { label: [`${LABELS.scope}=${scope}`] } });
  await Promise.all(containers.map((info) => docker.getContainer(info.Id).remove({ force: true }).catch(() => undefined)));
  const images = await docker.listImages({ filters: { reference: [`assembly-line-snapshot/${scope}-*`] } });
  for (const image of images) {
    for (const tag of image.RepoTags ?? []) await docker.getImage(tag).remove({ force: true }).catch(() => undefined);
  }
}
