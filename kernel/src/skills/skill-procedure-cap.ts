import { headOf } from "../text-cut.js";

/**
 * The most of a skill's procedure (SKILL.md after its front matter), in characters, that
 * load_skill hands the model and a resumed run's active-skill part shows: a skill the agent
 * wrote can grow without bound, and the whole of it would enter every later context.
 */
export const LOAD_SKILL_MAX_CHARS = 32_000;

/** `body` whole when it fits, else its head and a note of how much was cut and where the rest is. */
export function boundedProcedure(name: string, body: string): string {
  if (body.length <= LOAD_SKILL_MAX_CHARS) return body;
  const head = headOf(body, LOAD_SKILL_MAX_CHARS);
  return `${head}\n[procedure cut: ${body.length - head.length} more characters; read /skills/${name}/SKILL.md for the rest]`;
}
