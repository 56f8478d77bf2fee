import { AssemblyLineError } from "../errors.js";
import { quote } from "./exec-script.js";

/** Largest file readFile returns: the provider hands a file back whole, in memory (the Docker sandbox's limit too). */
export const MAX_READ_BYTES = 256 * 1024 * 1024;

/** A script printing the size of the file at `path` in bytes (stat reads no content). */
export function sizeScript(path: string): string {
  return `stat -c %s -- ${quote(path)}`;
}

/** Refuse a file larger than readFile returns, before (size as stat saw it) or after (bytes that came back) its download. */
export function checkReadSize(provider: string, path: string, size: number): void {
  if (size <= MAX_READ_BYTES) return;
  throw new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `could not read ${path} in the ${provider} sandbox: the file has ${size} bytes, more than the ${MAX_READ_BYTES} readFile returns`, {
    fix: "Read it in parts with exec (head -c, tail -c, split), or compress it in the sandbox first.",
    details: { path, size, limit: MAX_READ_BYTES },
  });
}
