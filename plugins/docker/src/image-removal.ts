import type Docker from "dockerode";
import type { RuntimeLogger } from "@assemblyline-agents/core";
import { engineMessage, statusOf, withDeadline } from "./engine.js";

/**
 * Remove the tag `reference` of an image this plugin made, never forced.
 * Untagging frees the image's data only when nothing else holds it (another
 * tag, a child image); an image a container still uses is refused by the
 * engine (409), and that or any other refusal is logged and the image left:
 * cleaning up never fails the run or the deploy it follows. Returns whether
 * the tag is gone.
 */
export async function removeImageTag(docker: Docker, reference: string, logger: RuntimeLogger, context: Record<string, unknown> = {}, timeoutMs?: number): Promise<boolean> {
  try {
    const removal = docker.getImage(reference).remove();
    await (timeoutMs === undefined ? removal : withDeadline(`removing image ${reference}`, removal, timeoutMs));
    logger.info({ event: "docker.image_removed", image: reference, ...context }, `removed image ${reference}`);
    return true;
  } catch (error) {
    if (statusOf(error) === 404) return true;
    const inUse = statusOf(error) === 409;
    logger.warn(
      { event: "docker.image_left", image: reference, status: statusOf(error), reason: engineMessage(error), ...context },
      inUse
        ? `left image ${reference}: a container still uses it; remove it with \`docker rmi ${reference}\` once that container is gone`
        : `left image ${reference}: the engine refused to remove it (${engineMessage(error)}); remove it with \`docker rmi ${reference}\``,
    );
    return false;
  }
}
