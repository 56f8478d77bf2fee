import { createHash } from "node:crypto";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The hash a manifest records for one of an agent's files (its revision is made
 * of these). Text is hashed with its line endings made `\n`, so a Windows
 * checkout builds the revision a Unix one does; anything that is not UTF-8 (an
 * image, a model, a `.wasm` a tool reads through `new URL(..., import.meta.url)`)
 * is hashed byte for byte, so every change to it makes a new revision. Read as
 * text, bytes that are not UTF-8 all became U+FFFD, and such a change was lost.
 */
export function sourceFileHash(bytes: Uint8Array): string {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return createHash("sha256").update("binary\0").update(bytes).digest("hex");
  }
  return createHash("sha256").update(text.replace(/\r\n/g, "\n")).digest("hex");
}
