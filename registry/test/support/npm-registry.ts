import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

/** A release packed from a folder, ready to publish: its package.json and the tarball's bytes. */
export interface PackedRelease {
  name: string;
  version: string;
  manifest: Record<string, unknown>;
  tarball: Buffer;
  /** `sha512-...` of the tarball, as npm writes it in the lock file. */
  integrity: string;
  shasum: string;
}

/**
 * An npm registry on 127.0.0.1 that real `npm pack` and `npm install` use
 * (point them at it with npm_config_registry): `GET /<name>` and
 * `GET /@scope%2fname` answer the packument, `GET /<name>/-/<file>.tgz` the
 * tarball. Packuments carry an ETag and `max-age=0`, so npm revalidates them on
 * every command the way it would against a registry that has just changed.
 */
export class LocalNpmRegistry {
  private readonly releases = new Map<string, Map<string, PackedRelease>>();
  private readonly latest = new Map<string, string>();
  private readonly tarballListeners: Array<{ release: PackedRelease; listener: () => void }> = [];
  /** Every packument sent (not 304s), in order, with the `latest` tag it carried. */
  readonly packumentsSent: Array<{ name: string; latest: string | undefined }> = [];
  /** Every tarball sent, in order. */
  readonly tarballsSent: Array<{ name: string; version: string }> = [];

  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    readonly url: string,
    private readonly work: string,
  ) {}

  static async start(): Promise<LocalNpmRegistry> {
    const work = await mkdtemp(join(tmpdir(), "al-npm-registry-"));
    let registry: LocalNpmRegistry | undefined;
    const server = createServer((request, response) => registry!.answer(request, response));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    registry = new LocalNpmRegistry(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, work);
    return registry;
  }

  /** `npm pack` a package folder, as a publisher's release would; nothing is served until `publish`. */
  async pack(folder: string): Promise<PackedRelease> {
    const destination = await mkdtemp(join(this.work, "pack-"));
    const { stdout } = await promisify(execFile)("npm", ["pack", folder, "--pack-destination", destination, "--json", "--ignore-scripts"], { cwd: destination });
    const packed = (JSON.parse(stdout) as Array<{ filename: string }>)[0]!;
    const tarball = await readFile(join(destination, packed.filename));
    const manifest = JSON.parse(await readFile(join(folder, "package.json"), "utf8")) as Record<string, unknown> & { name: string; version: string };
    return {
      name: manifest.name,
      version: manifest.version,
      manifest,
      tarball,
      integrity: `sha512-${createHash("sha512").update(tarball).digest("base64")}`,
      shasum: createHash("sha1").update(tarball).digest("hex"),
    };
  }

  /** List the release in its packument and tag it `latest`. */
  publish(release: PackedRelease): void {
    const versions = this.releases.get(release.name) ?? new Map<string, PackedRelease>();
    versions.set(release.version, release);
    this.releases.set(release.name, versions);
    this.latest.set(release.name, release.version);
  }

  /** Run `listener` once, right after the release's tarball has been sent for the first time. */
  afterTarballSent(release: PackedRelease, listener: () => void): void {
    this.tarballListeners.push({ release, listener });
  }

  async close(): Promise<void> {
    await new Promise((resolve) => this.server.close(resolve));
    await rm(this.work, { recursive: true, force: true });
  }

  private tarballUrl(release: PackedRelease): string {
    const base = release.name.includes("/") ? release.name.split("/")[1]! : release.name;
    return `${this.url}${release.name}/-/${base}-${release.version}.tgz`;
  }

  private packument(name: string): Record<string, unknown> | undefined {
    const versions = this.releases.get(name);
    if (!versions) return undefined;
    return {
      _id: name,
      name,
      "dist-tags": { latest: this.latest.get(name) },
      versions: Object.fromEntries(
        [...versions.values()].map((release) => [
          release.version,
          { ...release.manifest, _id: `${name}@${release.version}`, dist: { tarball: this.tarballUrl(release), shasum: release.shasum, integrity: release.integrity } },
        ]),
      ),
    };
  }

  private answer(request: IncomingMessage, response: ServerResponse): void {
    const path = decodeURIComponent(new URL(request.url ?? "/", this.url).pathname).slice(1);
    if (request.method !== "GET") return refuse(response, 405, "method not allowed");
    const tarball = /^(.+)\/-\/[^/]+-(\d[^/]*)\.tgz$/.exec(path);
    if (tarball) {
      const release = this.releases.get(tarball[1]!)?.get(tarball[2]!);
      if (!release) return refuse(response, 404, "not found");
      response.writeHead(200, { "content-type": "application/octet-stream", "content-length": release.tarball.length });
      response.end(release.tarball);
      this.tarballsSent.push({ name: release.name, version: release.version });
      for (const [index, waiting] of [...this.tarballListeners.entries()].reverse()) {
        if (waiting.release !== release) continue;
        this.tarballListeners.splice(index, 1);
        waiting.listener();
      }
      return;
    }
    const packument = this.packument(path);
    if (!packument) return refuse(response, 404, "not found");
    const body = JSON.stringify(packument);
    const etag = `"${createHash("sha1").update(body).digest("hex")}"`;
    const headers = { etag, "cache-control": "max-age=0" };
    if (request.headers["if-none-match"] === etag) {
      response.writeHead(304, headers);
      response.end();
      return;
    }
    response.writeHead(200, { ...headers, "content-type": "application/json" });
    response.end(body);
    this.packumentsSent.push({ name: path, latest: this.latest.get(path) });
  }
}

/** The registry's error body: `{"error": "..."}`, which npm quotes. */
function refuse(response: ServerResponse, status: number, error: string): void {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify({ error }));
}
