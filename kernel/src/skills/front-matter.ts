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

/** Thrown for front matter in a language other than YAML; the message names the language. */
export class FrontMatterLanguageError extends Error {
  constructor(readonly language: string) {
    super(`front matter is marked "---${language}"; SKILL.md front matter is YAML only`);
    this.name = "FrontMatterLanguageError";
  }
}

const YAML_ONLY = (language: string) => () => {
  throw new FrontMatterLanguageError(language);
};

/**
 * Parse front matter as YAML and nothing else. gray-matter also accepts
 * `---js` (and `---javascript`, `---coffee`, `---json`) and evaluates a `js`
 * block with eval(): SKILL.md is written by agents under self-improvement, so
 * every engine but YAML is replaced by one that refuses, and the language tag
 * is checked before parsing.
 */
export function parseFrontMatter(source: string): matter.GrayMatterFile<string> {
  const gray = frontMatter();
  // An editor's byte order mark is not text: the file still starts with its front matter.
  const text = source.startsWith("\uFEFF") ? source.slice(1) : source;
  // gray-matter reads a "language" off the first line whether or not it opens front matter.
  const language = text.startsWith("---") ? (gray.language(text, {}).name ?? "") : "";
  if (language !== "" && !["yaml", "yml"].includes(language.toLowerCase())) throw new FrontMatterLanguageError(language);
  // An options object (never shared) also keeps gray-matter from caching by content (its cache returns shared objects).
  return gray(text, {
    engines: {
      javascript: YAML_ONLY("javascript"),
      js: YAML_ONLY("js"),
      coffee: YAML_ONLY("coffee"),
      json: YAML_ONLY("json"),
    },
  } as unknown as Parameters<typeof matter>[1]);
}
