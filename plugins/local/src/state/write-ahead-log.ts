import { open, type FileHandle } from "node:fs/promises";
import { crc32 } from "node:zlib";

/**
 * An append-only file of checksummed records, one per line:
 *
 *   <crc32 of the JSON, 8 hex digits> <JSON>\n
 *
 * A record is appended with one write() and made durable with fdatasync before
 * `append` resolves. A crash mid-write leaves at most one torn record at the end
 * (no newline, or a checksum that does not match); `read` stops at the first such
 * record and `openForAppend` cuts the file there, so a record is either wholly in
 * the log or not at all.
 */
export class WriteAheadLog {
  private constructor(
    readonly path: string,
    private readonly handle: FileHandle,
    private size: number,
  ) {}

  /** Parse every intact record; `validBytes` is where the intact prefix ends. */
  static async read(path: string): Promise<{ records: unknown[]; validBytes: number; totalBytes: number }> {
    let bytes: Buffer;
    try {
      const handle = await open(path, "r");
      try {
        bytes = await handle.readFile();
      } finally {
        await handle.close();
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return { records: [], validBytes: 0, totalBytes: 0 };
      throw error;
    }
    const records: unknown[] = [];
    let offset = 0;
    while (offset < bytes.length) {
      const end = bytes.indexOf(0x0a, offset);
      if (end < 0) break;
      const record = decodeLine(bytes.subarray(offset, end));
      if (record === undefined) break;
      records.push(record);
      offset = end + 1;
    }
    return { records, validBytes: offset, totalBytes: bytes.length };
  }

  /** Open for appending after cutting anything past `validBytes` (a torn tail). */
  static async openForAppend(path: string, validBytes: number): Promise<WriteAheadLog> {
    const handle = await open(path, "a+");
    try {
      const { size } = await handle.stat();
      if (size > validBytes) {
        await handle.truncate(validBytes);
        await handle.sync();
      }
      return new WriteAheadLog(path, handle, validBytes);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  get bytes(): number {
    return this.size;
  }

  /** Durably append one record, given as its JSON text; resolves only once it is on disk. */
  async append(json: string): Promise<void> {
    const line = encodeLine(json);
    try {
      let written = 0;
      while (written < line.length) {
        const { bytesWritten } = await this.handle.write(line, written, line.length - written);
        written += bytesWritten;
      }
      await this.handle.datasync();
      this.size += line.length;
    } catch (error) {
      // Cut a partial write so the next append does not land after garbage.
      await this.handle.truncate(this.size).catch(() => undefined);
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

function encodeLine(text: string): Buffer {
  const json = Buffer.from(text, "utf8");
  const checksum = Buffer.from(`${crc32(json).toString(16).padStart(8, "0")} `, "ascii");
  return Buffer.concat([checksum, json, Buffer.from("\n", "ascii")]);
}

function decodeLine(line: Buffer): unknown {
  if (line.length < 10 || line[8] !== 0x20) return undefined;
  const expected = Number.parseInt(line.subarray(0, 8).toString("ascii"), 16);
  const json = line.subarray(9);
  if (!Number.isInteger(expected) || crc32(json) !== expected) return undefined;
  try {
    return JSON.parse(json.toString("utf8"));
  } catch {
    return undefined;
  }
}
