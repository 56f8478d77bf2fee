import { cpSync, mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const EXAMPLE = resolve(import.meta.dirname, "../../examples/docker-gateway-agent");
const REPO_MODULES = resolve(import.meta.dirname, "../../node_modules");

/** A copy of the example outside the repo that still resolves the workspace's packages. */
export function copyExample(): { agentDir: string; root: string } {
  const root = mkdtempSync(join(tmpdir(), "al-docker-gateway-"));
  const agentDir = join(root, "agent");
  cpSync(EXAMPLE, agentDir, { recursive: true, filter: (source) => !source.includes(".assembly-line") });
  symlinkSync(REPO_MODULES, join(root, "node_modules"));
  return { agentDir, root };
}
