import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
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
export class EncryptedGrantStore implements GrantStore {
  private readonly key: Buffer;
  private writing: Promise<void> = Promise.resolve();

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
    const sealed = (await this.read())[id];
    if (!sealed) return undefined;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(sealed.iv, "base64"));
      decipher.setAAD(Buffer.from(id, "utf8"));
      decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
      return Buffer.concat([decipher.update(Buffer.from(sealed.data, "base64")), decipher.final()]).toString("utf8");
    } catch {
      throw new AssemblyLineError("AL_ERR_GRANT_KEY", `grant "${id}" does not decrypt with this ASSEMBLY_LINE_SECRET_KEY`, {
        fix: "Use the key the grant was stored with, or store the grant again.",
      });
    }
  }

  async put(id: string, secret: string): Promise<void> {
    if (typeof id !== "string" || id === "" || typeof secret !== "string" || secret === "") {
      throw new AssemblyLineError("AL_ERR_GRANT_MISSING", "grants.put(id, secret) needs a non-empty id and secret", { fix: 'Call grants.put("github", token).' });
    }
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(Buffer.from(id, "utf8"));
    const data = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
    await this.update((grants) => ({ ...grants, [id]: { iv: iv.toString("base64"), tag: cipher.getAuthTag().toString("base64"), data: data.toString("base64") } }));
  }

  async delete(id: string): Promise<void> {
    await this.update(({ [id]: _removed, ...rest }) => rest);
  }

  private async read(): Promise<Record<string, SealedGrant>> {
    try {
      return JSON.parse(await readFile(this.options.path, "utf8")) as Record<string, SealedGrant>;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
      throw error;
    }
  }

  private update(change: (grants: Record<string, SealedGrant>) => Record<string, SealedGrant>): Promise<void> {
    const next = this.writing.then(async () => {
      const grants = change(await this.read());
      await mkdir(dirname(this.options.path), { recursive: true });
      const temporary = `${this.options.path}.${process.pid}.tmp`;
      await writeFile(temporary, JSON.stringify(grants), { mode: 0o600 });
      await rename(temporary, this.options.path);
    });
    this.writing = next.catch(() => undefined);
    return next;
  }
}
