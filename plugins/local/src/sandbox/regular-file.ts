import { AssemblyLineError, MAX_READ_BYTES } from "@assemblyline-agents/core";
import { constants, type Stats } from "node:fs";
import { lstat, open, type FileHandle } from "node:fs/promises";

/*
 * O_NONBLOCK: opening a FIFO without a peer would otherwise wait forever, holding
 * one of libuv's four file threads (four such calls freeze every file call of the
 * host). On a regular file it changes nothing. O_NOFOLLOW: the caller resolved
 * the path already, so a symlink there now is one a command swapped in since.
 */
const OPEN_FLAGS = constants.O_NONBLOCK | constants.O_NOFOLLOW;

/**
 * Open `real` (a resolved host path) only if it is a regular file; `flags` adds
 * the access mode. A folder fails with EISDIR, anything else (a FIFO, a socket,
 * a device) with AL_ERR_PATH_NOT_FOUND naming `logical`.
 */
export async function openRegularFile(real: string, flags: number, logical: string, action: string, mode?: number): Promise<{ handle: FileHandle; stats: Stats }> {
  let handle: FileHandle;
  try {
    handle = await open(real, flags | OPEN_FLAGS, mode);
  } catch (error) {
    // ENXIO: a FIFO without a reader (opened for writing), or a socket.
    if ((error as NodeJS.ErrnoException).code !== "ENXIO") throw error;
    const stats = await lstat(real).catch(() => undefined);
    throw notRegularFile(action, logical, stats ? kindOf(stats) : "a FIFO or a socket");
  }
  try {
    const stats = await handle.stat();
    if (stats.isDirectory()) throw Object.assign(new Error("EISDIR"), { code: "EISDIR" });
    if (!stats.isFile()) throw notRegularFile(action, logical, kindOf(stats));
    return { handle, stats };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** The bytes of the regular file at `real`, refused past MAX_READ_BYTES (also when a command grows it while it is read). */
export async function readRegularFile(real: string, logical: string, sandboxId: string): Promise<Uint8Array> {
  const { handle, stats } = await openRegularFile(real, constants.O_RDONLY, logical, "read");
  try {
    if (stats.size > MAX_READ_BYTES) throw tooLarge(logical, sandboxId);
    // The spare byte tells a file that ends at its size from one a command is still growing.
    let buffer = Buffer.allocUnsafeSlow(stats.size + 1);
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        if (length > MAX_READ_BYTES) throw tooLarge(logical, sandboxId);
        const grown = Buffer.allocUnsafeSlow(Math.min(Math.max(length * 2, 64 * 1024), MAX_READ_BYTES + 1));
        buffer.copy(grown, 0, 0, length);
        buffer = grown;
      }
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > MAX_READ_BYTES) throw tooLarge(logical, sandboxId);
    return new Uint8Array(buffer.buffer, buffer.byteOffset, length);
  } finally {
    await handle.close();
  }
}

function kindOf(stats: Stats): string {
  if (stats.isFIFO()) return "a FIFO (named pipe)";
  if (stats.isSocket()) return "a socket";
  if (stats.isCharacterDevice()) return "a character device";
  if (stats.isBlockDevice()) return "a block device";
  return "of an unknown kind";
}

function notRegularFile(action: string, logical: string, kind: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_PATH_NOT_FOUND", `cannot ${action} ${logical}: it is ${kind}, not a regular file`, {
    fix: `readFile and writeFile take regular files only; reach a pipe, socket or device with exec (e.g. exec("cat ${logical}", { timeoutMs: 5000 })).`,
    details: { path: logical },
  });
}

function tooLarge(logical: string, sandboxId: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `could not read ${logical} in sandbox ${sandboxId}: the file is larger than ${MAX_READ_BYTES} bytes, the most readFile returns`, {
    fix: `Read it in parts with a command (e.g. exec("split -b 64m ${logical} part-")), or compress it first.`,
    details: { path: logical, maxBytes: MAX_READ_BYTES },
  });
}
