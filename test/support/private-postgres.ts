import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.js";

/**
 * A throwaway PostgreSQL cluster of its own, so a test can restart the server
 * without disturbing the shared one other suites use. Needs root (to run the
 * server as the postgres user) and the server binaries.
 */
export interface PrivatePostgres {
  url: string;
  restart(): void;
  stop(): void;
}

export function postgresBinDir(): string | undefined {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return undefined;
  const version = readdirSync(base).sort().at(-1);
  const bin = version ? join(base, version, "bin") : undefined;
  return bin && existsSync(join(bin, "initdb")) ? bin : undefined;
}


export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error("PostgreSQL server binaries not found under /usr/lib/postgresql");
  const dir = mkdtempSync(join(tmpdir(), "al-pg-"));
  chmodSync(dir, 0o700);
  const { uid, gid } = userIds("postgres");
  chownSync(dir, uid, gid);
  const port = await freePort();
  const asPostgres = (command: string, args: string[]) =>
    execFileSync("runuser", ["-u", "postgres", "--", join(bin, command), ...args], { stdio: "pipe", timeout: 60_000 });
  asPostgres("initdb", ["-D", join(dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync"]);
  const pgCtl = (...args: string[]) =>
    asPostgres("pg_ctl", ["-D", join(dir, "data"), "-l", join(dir, "server.log"), "-w", "-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, ...args]);
  pgCtl("start");
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: () => pgCtl("restart", "-m", "fast"),
    stop: () => {
      try {
        pgCtl("stop", "-m", "immediate");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

function userIds(name: string): { uid: number; gid: number } {
  const [uid, gid] = execFileSync("id", ["-u", name]).toString().trim().concat(" ", execFileSync("id", ["-g", name]).toString().trim()).split(" ").map(Number);
  return { uid: uid!, gid: gid! };
}
