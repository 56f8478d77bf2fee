import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { lock } from "proper-lockfile";
import { dirname, resolve as resolvePath } from "node:path";
import { AssemblyLineError } from "@assemblyline-agents/core";

/**
 * Where a host keeps connection credentials. Connections refer to a grant by
 * id; only the connections plugin reads the secret, at request time.
 */
export interface GrantStore {
  get(id: string): Promise<string | undefined>;
  put(id: string, secret: string): Promise<void>;
  delete(id: string): Promise<void>;
}

export interface EncryptedGrantStoreOptions {
  /** The file holding the encrypted grants (created on first put). */
  path: string;
  /** The key; default env ASSEMBLY_LINE_SECRET_KEY. At least 32 characters. */
  secretKey?: string;
  env?: Record<string, string | undefined>;
}

const MIN_KEY_LENGTH = 32;
const SALT = "assembly-line/grant-store/v1";

interface SealedGrant {
  iv: string;
  tag: string;
  data: string;
}

/**
 * The default grant store: one JSON file of AES-256-GCM sealed secrets (a
 * fresh 96-bit IV per secret, the grant id bound as additional data so a
 * sealed value cannot be moved to another id), keyed by scrypt of the host
 * secret ASSEMBLY_LINE_SECRET_KEY. Writes replace the file atomically.
 */
/** The change in progress per grant file (absolute path), shared by every store of this process on that file. */
const writing = new Map<string, Promise<void>>();

export class EncryptedGrantStore implements GrantStore {
  private readonly key: Buffer;

  constructor(private readonly options: EncryptedGrantStoreOptions) {
    const secret = options.secretKey ?? (options.env ?? process.env).ASSEMBLY_LINE_SECRET_KEY;
    if (typeof secret !== "string" || secret.length < MIN_KEY_LENGTH) {
      throw new AssemblyLineError("AL_ERR_GRANT_KEY", `the encrypted grant store needs ASSEMBLY_LINE_SECRET_KEY of at least ${MIN_KEY_LENGTH} characters (${secret ? `got ${secret.length}` : "it is unset"})`, {
        fix: "Set ASSEMBLY_LINE_SECRET_KEY to a long random secret (e.g. `openssl rand -base64 48`), the same on every replica.",
      });
    }
    this.key = scryptSync(secret, SALT, 32);
  }

  async get(id: string): Promise<string | undefined> {
    const grants = await this.read();
    // Own entries only: "constructor" or "toString" are no grants.
    if (!Object.hasOwn(grants, id)) return undefined;
    const secret = this.open(id, grants[id]!);
    if (secret === undefined) {
      throw new AssemblyLineError("AL_ERR_GRANT_KEY", `grant "${id}" does not decrypt with this ASSEMBLY_LINE_SECRET_KEY`, {
        fix: "Use the key the grant was stored with, or store the grant again.",
      });
    }
    return secret;
  }

  async put(id: string, secret: string): Promise<void> {
    if (typeof id !== "string" || id === "" || typeof secret !== "string" || secret === "") {
      throw new AssemblyLineError("AL_ERR_GRANT_MISSING", "grants.put(id, secret) needs a non-empty id and secret", { fix: 'Call grants.put("github", token).' });
    }
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(Buffer.from(id, "utf8"));
    const data = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
    await this.update((grants) => {
      // A store sealed under another key would end up half readable: refuse before writing anything.
      const other = Object.keys(grants).find((stored) => stored !== id);
      if (other !== undefined && this.open(other, grants[other]!) === undefined) {
        throw new AssemblyLineError("AL_ERR_GRANT_KEY", `grants.put("${id}"): the grants already in ${this.options.path} (such as "${other}") do not decrypt with this ASSEMBLY_LINE_SECRET_KEY; nothing was written`, {
          fix: "Use the key the store was written with (the same on every replica), or move the file away to start a new store.",
        });
      }
      return { ...grants, [id]: { iv: iv.toString("base64"), tag: cipher.getAuthTag().toString("base64"), data: data.toString("base64") } };
    });
  }

  async delete(id: string): Promise<void> {
    await this.update(({ [id]: _removed, ...rest }) => rest);
  }

  /** The secret sealed under `id`, or undefined when it does not decrypt with this key. */
  private open(id: string, sealed: SealedGrant): string | undefined {
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(sealed.iv, "base64"));
      decipher.setAAD(Buffer.from(id, "utf8"));
      decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
      return Buffer.concat([decipher.update(Buffer.from(sealed.data, "base64")), decipher.final()]).toString("utf8");
    } catch {
      return undefined;
    }
  }

  private async read(): Promise<Record<string, SealedGrant>> {
    let text: string;
    try {
      text = await readFile(this.options.path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
      throw error;
    }
    let grants: unknown;
    try {
      grants = JSON.parse(text);
    } catch (error) {
      grants = error;
    }
    const sealed = (value: unknown) => typeof value === "object" && value !== null && ["iv", "tag", "data"].every((field) => typeof (value as Record<string, unknown>)[field] === "string");
    if (typeof grants !== "object" || grants === null || Array.isArray(grants) || grants instanceof Error || !Object.values(grants).every(sealed)) {
      throw new AssemblyLineError("AL_ERR_GRANT_KEY", `${this.options.path} is not a grant store (${grants instanceof Error ? `not JSON: ${grants.message}` : "not an object of sealed grants"}); it was left as it is`, {
        fix: "Restore the file from a backup, or move it away and store the grants again.",
      });
    }
    return grants as Record<string, SealedGrant>;
  }

  /** Read, change, write to a temporary file, rename: one change at a time per file, in this process and across processes (the file's lock). */
  private update(change: (grants: Record<string, SealedGrant>) => Record<string, SealedGrant>): Promise<void> {
    const path = resolvePath(this.options.path);
    const next = (writing.get(path) ?? Promise.resolve()).then(async () => {
      await mkdir(dirname(path), { recursive: true });
      await holdingLock(path, async () => {
        const grants = change(await this.read());
        // Unique per write: two stores (or processes) on one file never write the same temporary file.
        const temporary = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
        try {
          await writeFile(temporary, JSON.stringify(grants), { mode: 0o600 });
          await rename(temporary, path);
        } catch (error) {
          await rm(temporary, { force: true });
          throw error;
        }
      });
    });
    const settled = next.catch(() => undefined);
    writing.set(path, settled);
    void settled.then(() => {
      if (writing.get(path) === settled) writing.delete(path);
    });
    return next;
  }
}

/**
 * Run `change` holding the grant file's lock (`<path>.lock`, proper-lockfile: a folder made
 * atomically, its time refreshed while held, taken over once it is stale, i.e. left by a process
 * that died holding it): two processes on one grant file (two hosts on one volume) would otherwise
 * each write back the file as they read it, and the grant the other put would be lost.
 */
async function holdingLock(path: string, change: () => Promise<void>): Promise<void> {
  // realpath off: the grant file need not exist yet. Retries wait about 10 s at most for the other writer.
  const release = await lock(path, { realpath: false, lockfilePath: `${path}.lock`, stale: 10_000, retries: { retries: 200, minTimeout: 5, maxTimeout: 50, randomize: true } });
  try {
    await change();
  } finally {
    await release();
  }
}
