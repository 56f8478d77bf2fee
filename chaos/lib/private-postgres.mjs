// A throwaway PostgreSQL cluster (initdb into a temp folder, its own port), so the
// suite can restart the server without touching the machine's shared one. The
// server refuses to run as root: it runs as the `postgres` OS user, which owns the folder.
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function postgresBinDir() {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return undefined;
  const version = readdirSync(base).sort().at(-1);
  const bin = version ? join(base, version, "bin") : undefined;
  return bin && existsSync(join(bin, "initdb")) ? bin : undefined;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no free port"))));
    });
  });
}

/** @returns {Promise<{ url: string, restart(mode?: "fast" | "immediate"): Promise<unknown>, stop(): void }>} */
export async function startPrivatePostgres() {
  const bin = postgresBinDir();
  if (!bin) throw new Error("PostgreSQL server binaries not found under /usr/lib/postgresql");
  if (process.getuid?.() !== 0) throw new Error("the chaos suite runs its private PostgreSQL as the postgres user: run it as root (as CI does)");
  const dir = mkdtempSync(join(tmpdir(), "al-chaos-pg-"));
  chmodSync(dir, 0o700);
  const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
  const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
  chownSync(dir, uid, gid);
  const port = await freePort();
  const asPostgres = (command, args) => execFileSync("runuser", ["-u", "postgres", "--", join(bin, command), ...args], { stdio: "pipe", timeout: 120_000 });
  asPostgres("initdb", ["-D", join(dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync"]);
  const serverArgs = (...args) => ["-D", join(dir, "data"), "-l", join(dir, "server.log"), "-w", "-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`, ...args];
  const pgCtl = (...args) => asPostgres("pg_ctl", serverArgs(...args));
  pgCtl("start");
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    /** Asynchronous, so the load goes on while the server is down. */
    restart: (mode = "fast") => promisify(execFile)("runuser", ["-u", "postgres", "--", join(bin, "pg_ctl"), ...serverArgs("restart", "-m", mode)], { timeout: 120_000 }),
    stop: () => {
      try {
        pgCtl("stop", "-m", "immediate");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
