import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.js";

export const SSHD = "/usr/sbin/sshd";
/** Where Debian (and others) install OpenSSH's SFTP server; sshd's built-in one otherwise. */
const SFTP_SERVERS = ["/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server", "/usr/lib/ssh/sftp-server"];

export interface RunningSshd {
  port: number;
  /** Private key authorized for root. */
  identityFile: string;
  stop(): Promise<void>;
}

/** Whether Debian's openssh-server is installed; in CI its absence fails the suite. */
export function sshdInstalled(suite: string): boolean {
  if (existsSync(SSHD)) return true;
  if (process.env.CI) throw new Error(`${suite}: ${SSHD} is missing; CI requires it (.ci/services/sshd.sh installs openssh-server)`);
  console.log(`skipping ${suite}: ${SSHD} is not installed (apt-get install openssh-server)`);
  return false;
}


/** A private sshd on 127.0.0.1 with its own host key and one authorized client key. */
export async function startSshd(): Promise<RunningSshd> {
  const dir = mkdtempSync(join(tmpdir(), "al-sshd-"));
  mkdirSync("/run/sshd", { recursive: true });
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, "host_key")]);
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, "client_key")]);
  execFileSync("sh", ["-c", `cp "${join(dir, "client_key.pub")}" "${join(dir, "authorized_keys")}"`]);
  const port = await freePort();
  writeFileSync(
    join(dir, "sshd_config"),
    [
      `Port ${port}`,
      "ListenAddress 127.0.0.1",
      `HostKey ${join(dir, "host_key")}`,
      `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "PermitRootLogin prohibit-password",
      "StrictModes no",
      "UsePAM no",
      // scp (OpenSSH 9 copies over SFTP) needs it: the vps target's fallback when rsync is missing.
      `Subsystem sftp ${SFTP_SERVERS.find((path) => existsSync(path)) ?? "internal-sftp"}`,
      `PidFile ${join(dir, "sshd.pid")}`,
      "",
    ].join("\n"),
  );
  const child: ChildProcess = spawn(SSHD, ["-D", "-e", "-f", join(dir, "sshd_config")], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr!.on("data", (chunk) => (log += chunk));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sshd did not start:\n${log}`)), 20_000);
    const check = () => {
      if (/Server listening/.test(log)) {
        clearTimeout(timer);
        resolve();
      } else if (child.exitCode !== null) {
        clearTimeout(timer);
        reject(new Error(`sshd exited:\n${log}`));
      } else setTimeout(check, 100);
    };
    check();
  });
  return {
    port,
    identityFile: join(dir, "client_key"),
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
