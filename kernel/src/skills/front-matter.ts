import { createRequire } from "node:module";
import type matter from "gray-matter";

let loaded: typeof matter | undefined;

/**
 * gray-matter, required on first use: a runtime whose agent has no skills never
 * loads it (or the YAML parser under it).
 */
export function frontMatter(): typeof matter {
  return (loaded ??= createRequire(import.meta.url)("gray-matter") as typeof matter);
}
