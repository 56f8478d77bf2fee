import { brand, hasBrand, type Branded } from "./brand.js";

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** true when output was cut at the cap. */
  truncated: boolean;
}

/** One isolated workspace: files and a shell rooted at `/workspace`. */
export interface Sandbox {
  readonly id: string;
  /** Paths are logical, under `/workspace`. */
  readFile(path: string): Promise<Uint8Array>;
  writeFile(path: string, content: Uint8Array | string): Promise<void>;
  deleteFile(path: string): Promise<void>;
  listFiles(path: string): Promise<Array<{ path: string; type: "file" | "directory"; size: number }>>;
  exec(command: string, options?: { cwd?: string; timeoutMs?: number; maxOutputBytes?: number; env?: Record<string, string> }): Promise<ExecResult>;
}

/** Creates sandboxes, one per run, lazily. */
export interface SandboxAdapter {
  readonly name: string;
  acquire(key: string): Promise<Sandbox>;
  release(key: string): Promise<void>;
}

export interface SandboxOptions {
  adapter: "local" | "docker" | "daytona" | "e2b" | "modal" | (string & {});
  image?: string;
  /** Omit or `/workspace`: shell commands see a real, physical `/workspace`. */
  workingDirectory?: "/workspace";
  network?: "none" | "bridge" | (string & {});
  snapshot?: { mode: "manual" | "auto"; retainLast?: number; reason?: string };
}

export type SandboxDefinition = SandboxOptions & Branded<"assembly-line.sandbox">;

export function defineSandbox(options: SandboxOptions): SandboxDefinition {
  return brand("assembly-line.sandbox", options);
}

export function isSandboxDefinition(value: unknown): value is SandboxDefinition {
  return hasBrand(value, "assembly-line.sandbox");
}
