import { rmSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LABELS } from "@assemblyline-agents/docker";
import { baseImages, probeEngine } from "../plugins/docker/test/support/engine.js";
import { s3rverInstalled, startS3rver, type RunningS3rver } from "../plugins/s3/test/support/s3rver.js";
import { getJson, postJson, serveAgent, type ServedAgent } from "./support/agent-server.js";
import { freshDatabase } from "./support/fresh-database.js";
import { copyExample } from "./support/example-copy.js";

const BUCKET = "gateway-blobs";

const probe = await probeEngine("the spec's docker gateway example");
if (probe.available && !s3rverInstalled()) throw new Error("s3rver is not installed (npm ci installs it)");

if (probe.available) {
  const { docker } = probe;
  let s3: RunningS3rver;
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let dev: ServedAgent | undefined;
  let root: string;

  beforeAll(async () => {
    const images = await baseImages(docker);
    // No registry here: the spec's image name points at the locally imported node image.
    await docker.getImage("node:22-slim").inspect().catch(() => docker.getImage(images.node).tag({ repo: "node", tag: "22-slim" }));
    s3 = await startS3rver([BUCKET]);
    database = await freshDatabase("al_gateway");
  }, 180_000);

  afterAll(async () => {
    await dev?.stop();
    await s3?.stop();
    await database?.drop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  describe("the spec's gateway.ts example (docker deploy, node runtime, postgres, r2 blob, docker sandbox without network, local scheduler)", () => {
    it("boots with `assembly-line dev`, and a scripted run's bash runs inside a networkless container that is removed at the run's end", async () => {
      const copy = copyExample();
      root = copy.root;
      dev = await serveAgent(["dev", copy.agentDir, "--port", "0", "--model", `scripted:${join(copy.agentDir, "conversations/inspect-sandbox.json")}`], {
        DATABASE_URL: database.url,
        R2_ENDPOINT: s3.endpoint,
        R2_BUCKET: BUCKET,
        R2_ACCESS_KEY_ID: "S3RVER",
        R2_SECRET_ACCESS_KEY: "S3RVER",
      });
      expect((await getJson(`${dev.url}/readyz`)).status).toBe(200);

      const sent = await postJson(`${dev.url}/message?wait=120`, { message: "check the sandbox" });
      expect(sent.body).toMatchObject({ status: "completed", response: { text: "Ran the checks in the sandbox." } });
      const run = await getJson(`${dev.url}/runs/${sent.body.runId}`);
      const bash = (run.body.toolCalls as Array<{ toolName: string; status: string; output: { stdout: string; exitCode: number } }>).find((call) => call.toolName === "bash");
      expect(bash?.status).toBe("completed");
      const lines = Object.fromEntries(bash!.output.stdout.trim().split("\n").map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]));
      expect(lines.host).not.toBe(hostname());
      expect(lines.pwd).toBe("/workspace");
      expect(lines.net?.trim()).toBe("lo");
      expect(lines.image).toBe("assembly-line test image: node");
      expect(lines.node).toBe(process.version);
      // The host's PostgreSQL answers on 127.0.0.1:5432; from inside the sandbox nothing does.
      expect(lines.postgres).toBe("ECONNREFUSED");

      // Released at the run's end (just after the run is recorded completed): no container is left for it.
      const containersOfRun = () => docker.listContainers({ all: true, filters: { label: [`${LABELS.key}=${sent.body.runId}`] } });
      for (let attempt = 0; attempt < 60 && (await containersOfRun()).length > 0; attempt += 1) await new Promise((done) => setTimeout(done, 500));
      expect(await containersOfRun()).toHaveLength(0);
      // State went to PostgreSQL, not to files beside the agent.
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      const stored = await client.query("SELECT id FROM assembly_line.runs").finally(() => client.end());
      expect(stored.rows.map((row) => row.id)).toContain(sent.body.runId);
    }, 240_000);
  });
}
