import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeDeployConformance } from "@assemblyline-agents/core/testkit";
import { LocalDeployTarget } from "../src/index.js";

describeDeployConformance("LocalDeployTarget", async () => {
  const directory = await mkdtemp(join(tmpdir(), "al-deploy-kit-"));
  return { state: new LocalDeployTarget({ directory }), cleanup: () => rm(directory, { recursive: true, force: true }) };
});
