import { AssemblyLineError, blobBodyBytes, blobContentType, type BlobStore } from "@assemblyline-agents/core";
import { randomBytes } from "node:crypto";
import { mkdir, open, readFile, readdir, rename, rmdir, stat, unlink } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { describeOptions, unknownOptions } from "../known-options.js";

/*
 * Layout: a key "a/b/c.txt" is the file <directory>/a/b/c.txt@blob. Each key segment
 * is percent-encoded down to [a-z0-9._-] (upper-case letters too, as %41 to %5A, so
 * keys differing only in case stay apart on a case-insensitive file system: macOS,
 * Windows), so no segment can contain a separator, and "." / ".." / empty segments
 * are refused: a key cannot name anything outside the folder. Earlier versions kept
 * upper-case letters as they are; such a blob is still read and deleted, where its
 * name matches the key exactly, and a put of its key replaces it. "@" never survives encoding, so the "@blob" suffix keeps a key "a"
 * (file a@blob) apart from a key "a/b" (folder a), and "@tmp-" temp files apart
 * from both. A blob file is a 4-byte header length, a JSON header
 * ({ contentType }), then the body; it is written to a temp file, fsynced and
 * renamed into place, so a reader sees the old blob or the new one, never a mix,
 * and the folder is fsynced so the rename outlives a power loss; a delete fsyncs
 * the folder it removed the file (or emptied folders) from, so the blob stays
 * gone. A temp file a dead put left is removed by the first put or delete that
 * reaches its folder.
 */

const BLOB_SUFFIX = "@blob";
const TEMP_MARK = "@tmp-";
const MAX_KEY_LENGTH = 1024;
/** Most filesystems cap a file name at 255 bytes; leave room for "@blob@tmp-" and 12 hex digits. */
const MAX_SEGMENT_LENGTH = 200;
/** Linux's PATH_MAX (4096 bytes with the closing NUL): the longest path, folder included, a file call takes. */
const MAX_PATH_BYTES = 4095;
/** What a temp file adds to a blob file's path: TEMP_MARK and 12 hex digits. */
const TEMP_SUFFIX_LENGTH = TEMP_MARK.length + 12;
/** With the u flag a surrogate pair is one code point, so this matches only a lone half. */
const LONE_SURROGATE = /\p{Surrogate}/u;
const SHORTER_KEY = "Use a shorter key (fewer segments, or hash a long name, e.g. files/<sha256>.bin), or a shorter blob folder.";
/** The largest file readFile reads (Node's kIoMaxLength, 2 GiB - 1): a blob file, header included, must fit. */
const MAX_FILE_BYTES = 2 ** 31 - 1;
/** A temp file untouched this long belongs to a put that died (a crash, a kill): the sweep removes it. */
const STALE_TEMP_MS = 60 * 60 * 1000;
/** What put names a temp file: the blob file, TEMP_MARK and 12 hex digits. */
const TEMP_NAME = /@blob@tmp-[0-9a-f]{12}$/;
/** How many swept folders a store remembers before it starts over. */
const MAX_SWEPT_FOLDERS = 10_000;
/** How often put makes its folders again after a concurrent delete removed them (ENOENT). */
const MAX_PUT_ATTEMPTS = 10;

export interface LocalBlobStoreOptions {
  /** The blob folder. Default: `<agentDir>/.assembly-line/blobs`. */
  directory?: string;
  /** The agent folder the default `directory` is under. Default: the working directory. */
  agentDir?: string;
}

/** Binary objects as files under one folder: the embedded default BlobStore. */
export class LocalBlobStore implements BlobStore {
  readonly directory: string;
  /** Folders already swept of stale temp files by this store: each is swept the first time a put or delete reaches it. */
  private readonly swept = new Set<string>();

  constructor(options: LocalBlobStoreOptions = {}) {
    const unknown = unknownOptions(options, ["directory", "agentDir"]);
    if (unknown.length > 0) {
      throw new AssemblyLineError("AL_ERR_BLOB_CONFIG", `LocalBlobStore ${describeOptions(unknown)} unknown`, { fix: "The options are directory and agentDir; check the spelling.", details: { options: unknown } });
    }
    for (const key of ["directory", "agentDir"] as const) {
      const value: unknown = options[key];
      if (value !== undefined && (typeof value !== "string" || value === "")) {
        throw new AssemblyLineError("AL_ERR_BLOB_CONFIG", `LocalBlobStore option ${key} is ${JSON.stringify(value)}; it must be a folder path`, { fix: `Pass ${key} as a non-empty string, or leave it out.` });
      }
    }
    this.directory = resolve(options.directory ?? join(options.agentDir ?? process.cwd(), ".assembly-line", "blobs"));
  }

  async put(key: string, body: Uint8Array, options: { contentType?: string } = {}): Promise<{ key: string; size: number }> {
    const { current, earlier } = this.where(key);
    if (current instanceof AssemblyLineError) throw current;
    const { folder, file } = current;
    const view = blobBodyBytes(key, body);
    const header = Buffer.from(JSON.stringify({ contentType: blobContentType(key, options.contentType) }), "utf8");
    const fileBytes = 4 + header.length + view.byteLength;
    if (fileBytes > MAX_FILE_BYTES) {
      throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `blob "${key}" is ${view.byteLength} bytes; the local blob store keeps at most ${MAX_FILE_BYTES - 4 - header.length} bytes in one blob (a blob file is read back whole, and Node reads at most ${MAX_FILE_BYTES} bytes at once)`, {
        fix: "Split the body into parts under several keys, or keep objects this large in an S3 store (s3Blob()).",
        details: { key, size: view.byteLength, limit: MAX_FILE_BYTES - 4 - header.length },
      });
    }
    // Copy first: the writes below wait, and a caller may reuse its buffer as soon as put returns its promise.
    const bytes = Buffer.from(view);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(header.length);
    // A concurrent delete removes the folders it empties (rmdir), which can land inside
    // mkdir's own walk down the path or between mkdir and open or rename; each shows as
    // ENOENT, and making the folders again and retrying gets past it.
    let made: string | undefined;
    for (let attempt = 0; ; attempt += 1) {
      const temp = `${file}${TEMP_MARK}${randomBytes(6).toString("hex")}`;
      try {
        // The highest folder made on any attempt: it and the ones below it are new entries to sync.
        const madeNow = await mkdir(folder, { recursive: true });
        if (madeNow !== undefined && (made === undefined || madeNow.length < made.length)) made = madeNow;
        await this.sweepOnce(folder);
        const handle = await open(temp, "wx");
        try {
          await handle.writev([length, header, bytes]);
          await handle.sync();
        } finally {
          await handle.close();
        }
        await rename(temp, file);
        // The rename, and any folder made on the way, live in folder entries until those are
        // synced: without this a power loss can undo a put whose caller already recorded the key.
        await syncFolders(made === undefined ? [folder] : foldersFrom(dirname(made), folder));
        // The same key as an earlier version named it: left in place, get would never see it
        // again, list would show the key twice over, and a delete would leave it behind.
        if (earlier !== undefined && (await this.holdsExactly(earlier))) await this.removeAt(key, earlier);
        return { key, size: bytes.byteLength };
      } catch (error) {
        await unlink(temp).catch(() => undefined);
        if ((error as NodeJS.ErrnoException).code === "ENAMETOOLONG") throw pathTooLong(key, error);
        if ((error as NodeJS.ErrnoException).code !== "ENOENT" || attempt >= MAX_PUT_ATTEMPTS - 1) throw error;
      }
    }
  }

  async get(key: string): Promise<{ body: Uint8Array; contentType: string } | undefined> {
    const { current, earlier } = this.where(key);
    if (current instanceof AssemblyLineError && earlier === undefined) throw current;
    if (!(current instanceof AssemblyLineError)) {
      const found = await this.read(key, current.file);
      if (found !== undefined) return found;
    }
    return earlier !== undefined && (await this.holdsExactly(earlier)) ? this.read(key, earlier.file) : undefined;
  }

  private async read(key: string, file: string): Promise<{ body: Uint8Array; contentType: string } | undefined> {
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return undefined;
      if (code === "ENAMETOOLONG") throw pathTooLong(key, error);
      if (code === "ERR_FS_FILE_TOO_LARGE") {
        throw new AssemblyLineError("AL_ERR_STATE_ROW_INVALID", `blob file ${file} (key "${key}") is larger than the ${MAX_FILE_BYTES} bytes the local blob store can read back`, {
          fix: "It was written by an older version or outside Assembly Line; read the file with a stream yourself, then delete it or put it again in parts.",
          details: { key, file },
          cause: error,
        });
      }
      throw error;
    }
    const headerLength = bytes.length >= 4 ? bytes.readUInt32BE(0) : Number.POSITIVE_INFINITY;
    let contentType: unknown;
    try {
      contentType = (JSON.parse(bytes.subarray(4, 4 + headerLength).toString("utf8")) as { contentType?: unknown }).contentType;
    } catch {
      contentType = undefined;
    }
    if (4 + headerLength > bytes.length || typeof contentType !== "string") {
      throw new AssemblyLineError("AL_ERR_STATE_ROW_INVALID", `blob file ${file} (key "${key}") is not in the local blob format`, {
        fix: "The file was written or edited outside Assembly Line; delete it or put the blob again.",
        details: { key, file },
      });
    }
    return { body: new Uint8Array(bytes.subarray(4 + headerLength)), contentType };
  }

  async delete(key: string): Promise<void> {
    const { current, earlier } = this.where(key);
    if (current instanceof AssemblyLineError && earlier === undefined) throw current;
    if (!(current instanceof AssemblyLineError)) await this.removeAt(key, current);
    if (earlier !== undefined && (await this.holdsExactly(earlier))) await this.removeAt(key, earlier);
  }

  /** Remove the blob file at `location` and the folders that leaves empty. */
  private async removeAt(key: string, { file, folder, folders }: Location): Promise<void> {
    try {
      await unlink(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENAMETOOLONG") throw pathTooLong(key, error);
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      return;
    }
    await this.sweepOnce(folder);
    // Remove folders the delete left empty, innermost first; stop at the first that is not.
    // One that holds only a dead put's temp file is empty once swept.
    let changed = folder;
    for (const each of [...folders].reverse()) {
      if (!(await this.removeIfEmpty(each))) break;
      changed = dirname(each);
    }
    // The unlink (or the last rmdir) lives in the innermost folder left until that is synced, as
    // put syncs after its rename: without it a power loss can bring back a blob the caller deleted.
    // A folder removed needs no sync of its own: its parent's entry, synced, takes it and all in it.
    await syncFolders([changed]);
  }

  /** rmdir `folder`, sweeping stale temp files out of it once if that is all that keeps it; false when it stays. */
  private async removeIfEmpty(folder: string): Promise<boolean> {
    try {
      await rmdir(folder);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOTEMPTY" || !(await this.sweepOnce(folder))) return false;
    }
    try {
      await rmdir(folder);
      return true;
    } catch {
      return false;
    }
  }

  /** Remove the stale temp files in `folder` the first time this store reaches it; true when it swept. */
  private async sweepOnce(folder: string): Promise<boolean> {
    if (this.swept.has(folder)) return false;
    // Forgotten now and then, so a long-lived store touching many folders holds no growing set (a second sweep is only a readdir).
    if (this.swept.size >= MAX_SWEPT_FOLDERS) this.swept.clear();
    this.swept.add(folder);
    await sweepStaleTemps(folder);
    return true;
  }

  async list(prefix = ""): Promise<string[]> {
    // A set: a key an earlier version wrote and a later put rewrote in this layout, between the put's rename and its removal of the old file, is in both.
    const keys = new Set<string>();
    await this.walk(this.directory, "", prefix, keys);
    return [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  private async walk(folder: string, keyPrefix: string, wanted: string, keys: Set<string>): Promise<void> {
    let entries;
    try {
      entries = await readdir(folder, { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    for (const entry of entries) {
      if (entry.isDirectory()) {
        const name = decodeSegment(entry.name);
        if (name === undefined) continue;
        const sub = `${keyPrefix}${name}/`;
        // Descend only where keys starting with `wanted` can be.
        if (sub.startsWith(wanted) || wanted.startsWith(sub)) await this.walk(join(folder, entry.name), sub, wanted, keys);
      } else if (entry.isFile() && entry.name.endsWith(BLOB_SUFFIX) && !entry.name.includes(TEMP_MARK)) {
        const name = decodeSegment(entry.name.slice(0, -BLOB_SUFFIX.length));
        const key = `${keyPrefix}${name}`;
        if (name !== undefined && key.startsWith(wanted)) keys.add(key);
      }
    }
  }

  /**
   * Validate `key` and map it to its file in this layout (or the refusal of a key too
   * long for it) and, for a key with upper-case letters, in the layout of earlier
   * versions, where one of its blobs may still be.
   */
  private where(key: string): { current: Location | AssemblyLineError; earlier?: Location } {
    const segments = validateKey(key);
    const current = this.locate(key, segments.map((segment) => encodeSegment(segment, CURRENT_NAME_CHAR)));
    if (!/[A-Z]/.test(key)) return { current };
    const earlier = this.locate(key, segments.map((segment) => encodeSegment(segment, EARLIER_NAME_CHAR)));
    return earlier instanceof AssemblyLineError ? { current } : { current, earlier };
  }

  private locate(key: string, encoded: string[]): Location | AssemblyLineError {
    for (const segment of encoded) {
      if (segment.length > MAX_SEGMENT_LENGTH) {
        return refuseKey(key, `has a segment that makes a ${segment.length}-character file name (each upper-case letter, and each byte outside [a-z0-9._-], takes 3), over the ${MAX_SEGMENT_LENGTH} this store allows under the common 255-byte limit`, SHORTER_KEY);
      }
    }
    const names = [...encoded.slice(0, -1), `${encoded[encoded.length - 1]}${BLOB_SUFFIX}`];
    const folders: string[] = [];
    let folder = this.directory;
    for (const segment of encoded.slice(0, -1)) {
      folder = join(folder, segment);
      folders.push(folder);
    }
    const file = join(folder, names[names.length - 1]!);
    const bytes = Buffer.byteLength(file) + TEMP_SUFFIX_LENGTH;
    if (bytes > MAX_PATH_BYTES) {
      return refuseKey(key, `makes a ${bytes}-byte file path under ${this.directory} (its temp file included), over the ${MAX_PATH_BYTES} bytes Linux allows`, SHORTER_KEY);
    }
    return { file, folder, folders, names };
  }

  /**
   * Whether an earlier version's blob is at `location`, its every name matching exactly:
   * on a case-insensitive file system the path alone would also find another key's blob
   * ("Report.pdf@blob" opens "report.pdf@blob").
   */
  private async holdsExactly(location: Location): Promise<boolean> {
    let folder = this.directory;
    for (const name of location.names) {
      const entries = await readdir(folder).catch(() => [] as string[]);
      if (!entries.includes(name)) return false;
      folder = join(folder, name);
    }
    return true;
  }
}

interface Location {
  file: string;
  folder: string;
  /** The folders above the file, outermost first. */
  folders: string[];
  /** The encoded segments, the file's own name (with its suffix) last. */
  names: string[];
}

function refuseKey(key: unknown, reason: string, fix = 'Use a relative key of "/"-separated segments, none empty, "." or "..", e.g. "files/run-1/report.pdf".', cause?: unknown): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_BLOB_KEY", `blob key ${JSON.stringify(key)} ${reason}`, { fix, details: { key }, ...(cause === undefined ? {} : { cause }) });
}

/** For a platform whose limits are below the ones locate() checks (macOS caps a path at 1024 bytes). */
function pathTooLong(key: string, error: unknown): AssemblyLineError {
  return refuseKey(key, "makes a file path longer than this filesystem allows (ENAMETOOLONG)", SHORTER_KEY, error);
}

function validateKey(key: unknown): string[] {
  const refuse = (reason: string): never => {
    throw refuseKey(key, reason);
  };
  if (typeof key !== "string" || key.length === 0) return refuse("is not a non-empty string");
  if (key.length > MAX_KEY_LENGTH) return refuse(`is longer than ${MAX_KEY_LENGTH} characters`);
  if (key.includes("\0")) return refuse("contains a NUL character");
  if (key.includes("\\")) return refuse('contains "\\"; separate segments with "/"');
  // UTF-8 turns every lone surrogate into U+FFFD, so "a\uD800" and "a\uDC00" would share one file.
  if (LONE_SURROGATE.test(key)) return refuse("is not well-formed Unicode (it holds a lone surrogate, which has no UTF-8 form)");
  const segments = key.split("/");
  if (segments.some((segment) => segment === "" || segment === "." || segment === "..")) return refuse(`has an empty, "." or ".." segment`);
  return segments;
}

/**
 * Remove temp files in `folder` older than STALE_TEMP_MS: a put that died mid-write
 * leaves one, which list hides but which keeps its folder from ever being removed.
 * A put in progress keeps writing to its temp file, so a fresh one is left alone.
 */
async function sweepStaleTemps(folder: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(folder);
  } catch {
    return;
  }
  const staleBefore = Date.now() - STALE_TEMP_MS;
  for (const name of names) {
    if (!TEMP_NAME.test(name)) continue;
    const temp = join(folder, name);
    const info = await stat(temp).catch(() => undefined);
    if (info?.isFile() && info.mtimeMs < staleBefore) await unlink(temp).catch(() => undefined);
  }
}

/** `top` and each folder below it down to `bottom`, deepest first. */
function foldersFrom(top: string, bottom: string): string[] {
  const folders = [bottom];
  for (let folder = bottom; folder !== top && dirname(folder) !== folder; ) {
    folder = dirname(folder);
    folders.push(folder);
  }
  return folders;
}

/** fsync each folder, so the entries made in it (a renamed file, a new folder) survive a power loss. */
async function syncFolders(folders: string[]): Promise<void> {
  for (const folder of folders) {
    let handle;
    try {
      handle = await open(folder, "r");
    } catch (error) {
      // A concurrent delete of the same key emptied and removed it: nothing of this put is left to keep.
      if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw error;
    }
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
}

/** What a file name keeps as it is: no upper-case letter, so no two keys' names differ only in case. */
const CURRENT_NAME_CHAR = /[a-z0-9._-]/;
/** What earlier versions kept as it is. */
const EARLIER_NAME_CHAR = /[A-Za-z0-9._-]/;

/** Percent-encode every UTF-8 byte that `kept` does not match (always as upper-case hex). */
function encodeSegment(segment: string, kept: RegExp): string {
  let out = "";
  for (const byte of Buffer.from(segment, "utf8")) {
    const char = String.fromCharCode(byte);
    out += kept.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** undefined for a name this store did not write (left alone by list). */
function decodeSegment(name: string): string | undefined {
  if (!/^(?:[A-Za-z0-9._-]|%[0-9A-F]{2})+$/.test(name)) return undefined;
  try {
    return decodeURIComponent(name);
  } catch {
    return undefined;
  }
}
