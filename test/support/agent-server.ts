import { spawn, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";

export const CLI = resolve(import.meta.dirname, "../../plugins/node/bin/assembly-line.js");

export interface ServedAgent {
  child: ChildProcess;
  url: string;
  output(): string;
  stop(): Promise<void>;
}

/** Run `assembly-line <args>` and wait for its "listening on" line (and the route list after it). */
export function serveAgent(args: string[], env: Record<string, string | undefined>): Promise<ServedAgent> {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, OPENAI_API_KEY: "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stderr!.on("data", (chunk) => (output += chunk));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((done) => child.once("exit", done));
    child.kill("SIGTERM");
    await exited;
  };
  return new Promise((ready, fail) => {
    let stdout = "";
    const timer = setTimeout(() => {
      void stop();
      fail(new Error(`assembly-line ${args[0]} printed no listening line:\n${stdout}\n${output}`));
    }, 120_000);
    child.stdout!.on("data", (chunk) => {
      stdout += chunk;
      output += chunk;
      const match = /listening on (\S+)/.exec(stdout);
      if (match && stdout.includes("/readyz")) {
        clearTimeout(timer);
        ready({ child, url: match[1]!, output: () => output, stop });
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      fail(new Error(`assembly-line ${args[0]} exited with ${code}:\n${output}`));
    });
  });
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

export async function getJson(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { headers });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}
