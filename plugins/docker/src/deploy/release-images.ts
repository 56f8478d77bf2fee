import type Docker from "dockerode";
import type { RuntimeLogger } from "@assemblyline-agents/core";
import { engineMessage } from "../engine.js";
import { removeImageTag } from "../image-removal.js";

/**
 * Labels a deploy puts on the images it builds, so that a later deploy removes
 * only its own: what the image is, whose release it is, and the tag it was
 * built under. An image built FROM a release inherits the labels but not the
 * tag, so it never passes for one; an image without them is never touched.
 */
export const DEPLOY_IMAGE_LABELS = {
  /** "release" or "runtime". */
  kind: "dev.assembly-line.deploy.image",
  /** The deploy's name (image repository and container prefix). */
  name: "dev.assembly-line.deploy.name",
  /** The tag the image was built under. */
  ref: "dev.assembly-line.deploy.ref",
  /** On a release image: the runtime image it was built on. */
  runtime: "dev.assembly-line.deploy.runtime",
  /** On a runtime image: the base image it was built on. */
  base: "dev.assembly-line.deploy.base",
} as const;

export function runtimeImageLabels(ref: string, baseImage: string): Record<string, string> {
  return { [DEPLOY_IMAGE_LABELS.kind]: "runtime", [DEPLOY_IMAGE_LABELS.ref]: ref, [DEPLOY_IMAGE_LABELS.base]: baseImage };
}

export function releaseImageLabels(name: string, ref: string, runtimeRef: string): Record<string, string> {
  return { [DEPLOY_IMAGE_LABELS.kind]: "release", [DEPLOY_IMAGE_LABELS.name]: name, [DEPLOY_IMAGE_LABELS.ref]: ref, [DEPLOY_IMAGE_LABELS.runtime]: runtimeRef };
}

interface ReleaseImage {
  ref: string;
  imageId: string;
  createdMs: number;
  runtimeRef: string | undefined;
}

/**
 * After a deploy of `name`: remove its release images beyond the newest `keep`
 * (`current`, the one just deployed, counting as the newest), except any a
 * running container uses; then the runtime images that only the removed
 * releases were built on. Every
 * removal is by tag and never forced, so an image a (stopped) container still
 * uses is logged and left for a later deploy. Never throws: a deploy does not
 * fail over cleaning up. Returns the tags removed.
 */
export async function removeOldReleaseImages(docker: Docker, options: { name: string; keep: number; current: string; logger: RuntimeLogger }): Promise<string[]> {
  const { name, keep, current, logger } = options;
  try {
    // The one just deployed counts first, also when it is an earlier build deployed again (a rollback).
    const releases = (await releaseImages(docker, name)).sort((a, b) => Number(b.ref === current) - Number(a.ref === current));
    const running = new Set((await docker.listContainers()).map((info) => info.ImageID));
    const kept = new Set(releases.slice(0, keep).map((release) => release.ref));
    const removed: string[] = [];
    const runtimes = new Set<string>();
    for (const release of releases) {
      if (kept.has(release.ref) || running.has(release.imageId)) continue;
      if (!(await removeImageTag(docker, release.ref, logger, { deploy: name }))) continue;
      removed.push(release.ref);
      if (release.runtimeRef) runtimes.add(release.runtimeRef);
    }
    for (const runtimeRef of runtimes) {
      if (await runtimeImageUnused(docker, runtimeRef)) {
        if (await removeImageTag(docker, runtimeRef, logger, { deploy: name })) removed.push(runtimeRef);
      }
    }
    return removed;
  } catch (error) {
    logger.warn({ event: "docker.image_left", deploy: name, reason: engineMessage(error) }, `could not clean up the old images of ${name}; they are left until the next deploy: ${engineMessage(error)}`);
    return [];
  }
}

/** The release images of `name` this target built, newest first. */
async function releaseImages(docker: Docker, name: string): Promise<ReleaseImage[]> {
  const listed = await docker.listImages({ filters: { label: [`${DEPLOY_IMAGE_LABELS.kind}=release`, `${DEPLOY_IMAGE_LABELS.name}=${name}`] } });
  const releases: ReleaseImage[] = [];
  for (const image of listed) {
    const ref = image.Labels?.[DEPLOY_IMAGE_LABELS.ref];
    // Only the tag it was built under: an image built from a release inherits its labels, and other tags are someone else's.
    if (!ref || !(image.RepoTags ?? []).includes(ref)) continue;
    // The engine lists creation in whole seconds; inspect has the full time, so quick successive deploys still sort.
    const created = await docker
      .getImage(ref)
      .inspect()
      .then((info) => Date.parse(info.Created), () => image.Created * 1000);
    releases.push({ ref, imageId: image.Id, createdMs: created, runtimeRef: image.Labels?.[DEPLOY_IMAGE_LABELS.runtime] });
  }
  return releases.sort((a, b) => b.createdMs - a.createdMs || (a.ref < b.ref ? 1 : -1));
}

/** Whether `runtimeRef` is a runtime image this target built that no remaining image (of any release name) is built on. */
async function runtimeImageUnused(docker: Docker, runtimeRef: string): Promise<boolean> {
  const info = await docker
    .getImage(runtimeRef)
    .inspect()
    .catch(() => undefined);
  const labels = info?.Config?.Labels ?? {};
  if (labels[DEPLOY_IMAGE_LABELS.kind] !== "runtime" || labels[DEPLOY_IMAGE_LABELS.ref] !== runtimeRef) return false;
  const dependents = await docker.listImages({ filters: { label: [`${DEPLOY_IMAGE_LABELS.runtime}=${runtimeRef}`] } });
  return dependents.length === 0;
}
