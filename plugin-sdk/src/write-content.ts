import { AssemblyLineError } from "./errors.js";

/**
 * Refuse `Sandbox.writeFile` content that is neither text nor bytes (null, a number,
 * an object, an ArrayBuffer from a tool's JS). A sandbox calls it before it opens the
 * file: a write failing on the content after opening would leave the file emptied.
 */
export function checkWriteContent(content: unknown, path: string): Uint8Array | string {
  if (typeof content === "string") return content;
  // By tag rather than instanceof, so bytes made in another realm (a vm context) are bytes too; a Buffer's tag is Uint8Array.
  if (ArrayBuffer.isView(content) && (content as { [Symbol.toStringTag]?: string })[Symbol.toStringTag] === "Uint8Array") return content as Uint8Array;
  const kind = content === null ? "null" : typeof content === "object" ? `of type ${Object.prototype.toString.call(content).slice(8, -1)}` : `of type ${typeof content}`;
  throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `writeFile ${JSON.stringify(path)}: content is ${kind}, not a string or a Uint8Array; nothing was written`, {
    fix: "Pass the file's content as a string (written as UTF-8) or a Uint8Array of its bytes (wrap an ArrayBuffer as new Uint8Array(buffer)).",
    details: { path },
  });
}
