import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeSandboxConformance } from "@assemblyline-agents/core/testkit";
import { LocalSandboxAdapter } from "../src/index.js";

describeSandboxConformance("LocalSandboxAdapter", async () => {
  const root = await mkdtemp(join(tmpdir(), "al-sandbox-kit-"));
  return { state: new LocalSandboxAdapter({ root }), cleanup: () => rm(root, { recursive: true, force: true }) };
}, { wholeFileWrites: true });
