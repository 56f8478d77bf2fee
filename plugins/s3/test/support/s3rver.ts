import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

export interface RunningS3rver {
  endpoint: string;
  stop(): Promise<void>;
}

/** Whether s3rver is installed; outside CI a suite skips without it, in CI it fails. */
export function s3rverInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve("s3rver");
    return true;
  } catch {
    return false;
  }
}

/** Start a private s3rver (S3-compatible, on a port the OS picks) with the given buckets. */
export async function startS3rver(buckets: string[]): Promise<RunningS3rver> {
  const directory = await mkdtemp(join(tmpdir(), "al-s3rver-"));
  const main = join(import.meta.dirname, "s3rver-main.mjs");
  if (!existsSync(main)) throw new Error(`missing ${main}`);
  const child: ChildProcess = spawn(process.execPath, [main, directory, ...buckets], {
    env: { ...process.env, NODE_OPTIONS: "--openssl-legacy-provider" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`s3rver exited with ${code} before listening`)));
    createInterface({ input: child.stdout! }).once("line", (line) => resolve((JSON.parse(line) as { port: number }).port));
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      await rm(directory, { recursive: true, force: true });
    },
  };
}
