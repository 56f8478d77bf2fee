import { spawn } from "node:child_process";
import { AssemblyLineError } from "@assemblyline-agents/core";

/** What one npm command printed, and how it exited. */
export interface NpmOutput {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `npm <args>` in `cwd` with npm's own client (npm.cmd through a shell on
 * Windows). Refuses with AL_ERR_PLUGIN_INSTALL only when npm cannot be started
 * (`doing` says what for); a failing command is the caller's to describe.
 */
export async function runNpm(args: readonly string[], cwd: string, doing: string): Promise<NpmOutput> {
  return new Promise<NpmOutput>((resolvePromise, reject) => {
    const child = spawn(process.platform === "win32" ? "npm.cmd" : "npm", [...args], { cwd, shell: process.platform === "win32", stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolvePromise({ code, stdout, stderr }));
  }).catch((error: Error) => {
    throw new AssemblyLineError("AL_ERR_PLUGIN_INSTALL", `could not start npm to ${doing}: ${error.message}`, { fix: "Install Node.js with npm on the PATH." });
  });
}
