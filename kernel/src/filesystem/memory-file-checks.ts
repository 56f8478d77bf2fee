import { AssemblyLineError } from "@assemblyline-agents/core";

/**
 * The most UTF-8 bytes a memory file's path (below /memory/) may have. Every state store must be
 * able to key it: PostgreSQL's index on memory paths takes at most about 2,700 bytes a key.
 */
export const MAX_MEMORY_PATH_BYTES = 1024;

/** Whether `text` holds a lone UTF-16 surrogate: half of a character (an emoji cut in two), which UTF-8 cannot encode. */
export function holdsLoneSurrogate(text: string): boolean {
  return !text.isWellFormed();
}

/**
 * Refuse, before any store sees it, a memory file not every state store can keep as it was given:
 * a path over MAX_MEMORY_PATH_BYTES, or content holding NUL (PostgreSQL refuses it in text) or a
 * lone surrogate (stored as U+FFFD, so the file would read back changed). The file tools hand these
 * refusals to the model; one store keeping what another refuses would make an agent's memory depend on its host.
 */
export function checkMemoryFile(relative: string, content: string, caller: string): void {
  // A UTF-16 unit is at most 3 UTF-8 bytes: a short path needs no count.
  const pathBytes = relative.length * 3 <= MAX_MEMORY_PATH_BYTES ? 0 : Buffer.byteLength(relative, "utf8");
  if (pathBytes > MAX_MEMORY_PATH_BYTES) {
    throw new AssemblyLineError("AL_ERR_PATH_TOO_LONG", `${caller}: the memory path is ${pathBytes} bytes of UTF-8, more than the ${MAX_MEMORY_PATH_BYTES} a memory path may have`, {
      fix: "Use a shorter path, e.g. a folder and a short name; keep a long description in the file, not in its name.",
      details: { size: pathBytes, limit: MAX_MEMORY_PATH_BYTES },
    });
  }
  const nul = content.includes("\u0000");
  if (!nul && !holdsLoneSurrogate(content)) return;
  const problem = nul ? "a NUL character (U+0000)" : "a lone UTF-16 surrogate (half of a character, e.g. an emoji cut in two)";
  throw new AssemblyLineError("AL_ERR_MEMORY_CONTENT_INVALID", `${caller}: content holds ${problem}, which not every state store can keep; nothing was written`, {
    fix: nul
      ? "Memory holds text: remove the NUL characters, or keep binary data in a /workspace file or a blob and note where it is."
      : "Cut text on character boundaries (Array.from or Intl.Segmenter, not String.slice), or replace the lone surrogate.",
    details: { problem: nul ? "nul" : "lone-surrogate" },
  });
}
