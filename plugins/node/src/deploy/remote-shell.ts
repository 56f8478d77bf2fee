import { spawn } from "node:child_process";
import { AssemblyLineError } from "@assemblyline-agents/core";

/** How to reach a host over SSH with the system's OpenSSH client (keys, agent and known_hosts as the user has them). */
export interface SshTarget {
  host: string;
  user: string;
  port: number;
  identityFile?: string;
  /** Extra `-o` options, e.g. ["StrictHostKeyChecking=accept-new"]. */
  options: string[];
}

export function sshArgs(target: SshTarget): string[] {
  return [
    "-p",
    String(target.port),
    "-o",
    "BatchMode=yes",
    ...(target.identityFile ? ["-i", target.identityFile, "-o", "IdentitiesOnly=yes"] : []),
    ...target.options.flatMap((option) => ["-o", option]),
  ];
}

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run a local program, collecting its output; `input` is written to its stdin. */
export function runProgram(program: string, args: string[], input?: string): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    // A remote command that does not read its input closes the pipe early; its exit code says how it went.
    child.stdin.on("error", () => undefined);
    child.stdin.end(input ?? "");
  });
}

/** Run `script` with sh on the remote host; a non-zero exit is AL_ERR_DEPLOY_TRANSPORT naming `what`. */
export async function remote(target: SshTarget, what: string, script: string, input?: string): Promise<string> {
  const result = await remoteResult(target, what, script, input);
  if (result.code !== 0) {
    throw new AssemblyLineError("AL_ERR_DEPLOY_TRANSPORT", `${what} on ${target.user}@${target.host}:${target.port} failed (exit ${result.code}): ${(result.stderr || result.stdout).trim().slice(-2_000)}`, {
      fix: `Check that \`ssh -p ${target.port} ${target.user}@${target.host}\` works with the same key, and read the remote output above.`,
      details: { step: what, host: target.host },
    });
  }
  return result.stdout;
}

/**
 * ssh's own exit status: it reached no shell on the host (connection refused or timed out,
 * authentication refused, a changed host key). No script this target runs exits with it.
 */
export const SSH_FAILED = 255;

/**
 * Run `script` and return how it exited, for the checks that read a remote exit code. ssh's
 * own failure is AL_ERR_DEPLOY_TRANSPORT naming `what`: read as the script's answer it would
 * pass for one ("no systemd", "node is not on the PATH").
 */
export async function remoteResult(target: SshTarget, what: string, script: string, input?: string): Promise<CommandResult> {
  const result = await runProgram("ssh", [...sshArgs(target), `${target.user}@${target.host}`, "sh", "-c", quote(script)], input);
  if (result.code === SSH_FAILED) {
    // ssh's stderr says why (the script, and the input that may hold secrets, are never in it).
    throw new AssemblyLineError("AL_ERR_DEPLOY_TRANSPORT", `ssh could not reach ${target.user}@${target.host}:${target.port} for ${what} (exit ${SSH_FAILED}): ${result.stderr.trim().slice(-2_000) || "ssh printed no reason"}`, {
      fix: `Check that the host is up and its ssh port is ${target.port}, and that \`ssh -p ${target.port} ${target.user}@${target.host}\` logs in with the same key without a prompt; if ssh says the host key changed, make sure the host was really replaced before you update known_hosts.`,
      details: { step: what, host: target.host, port: target.port },
    });
  }
  return result;
}

/** Single-quote for a POSIX shell. */
export function quote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
