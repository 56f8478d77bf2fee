import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { DEPLOY_LABEL } from "@assemblyline-agents/docker";
import { deployAgent } from "../plugins/node/src/cli/commands/deploy.js";
import { baseImages, probeEngine } from "../plugins/docker/test/support/engine.js";
import { s3rverInstalled, startS3rver, type RunningS3rver } from "../plugins/s3/test/support/s3rver.js";
import { getJson, postJson } from "./support/agent-server.js";
import { copyExample } from "./support/example-copy.js";
import { freshDatabase } from "./support/fresh-database.js";

const BUCKET = "deploy-blobs";
const TOKEN = "deploy-token-4b1f";
const SECRET = "sekret-value-9d2c1e";

const probe = await probeEngine("assembly-line deploy --target docker");
if (probe.available && !s3rverInstalled()) throw new Error("s3rver is not installed (npm ci installs it)");

if (probe.available) {
  const { docker } = probe;
  const name = `al-deploy-${Date.now().toString(36)}`;
  let s3: RunningS3rver;
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let root: string;
  let agentDir: string;

  beforeAll(async () => {
    const images = await baseImages(docker);
    await docker.getImage("node:22-slim").inspect().catch(() => docker.getImage(images.node).tag({ repo: "node", tag: "22-slim" }));
    s3 = await startS3rver([BUCKET]);
    database = await freshDatabase("al_deploy");
    ({ agentDir, root } = copyExample());
    writeFileSync(join(agentDir, "conversations/hello.json"), JSON.stringify({ turns: [{ text: "Hello from the release." }] }));
  }, 300_000);

  afterAll(async () => {
    const containers = await docker.listContainers({ all: true, filters: { label: [`${DEPLOY_LABEL}=${name}`] } });
    await Promise.all(containers.map((info) => docker.getContainer(info.Id).remove({ force: true }).catch(() => undefined)));
    // Release images are this suite's; the shared runtime image (keyed by the dependency digest) is a cache like the base images.
    for (const image of await docker.listImages({ filters: { reference: [`${name}:*`] } })) {
      for (const tag of image.RepoTags ?? []) await docker.getImage(tag).remove({ force: true }).catch(() => undefined);
    }
    await s3?.stop();
    await database?.drop();
    if (root) rmSync(root, { recursive: true, force: true });
  }, 180_000);

  const env = () => ({
    DATABASE_URL: database.url,
    R2_ENDPOINT: s3.endpoint,
    R2_BUCKET: BUCKET,
    R2_ACCESS_KEY_ID: "S3RVER",
    R2_SECRET_ACCESS_KEY: SECRET,
    ASSEMBLY_LINE_BEARER_TOKEN: TOKEN,
    UNRELATED_HOST_SECRET: "must-not-travel",
  });
  const deploy = (extra: Partial<Parameters<typeof deployAgent>[0]> = {}, environment: Record<string, string | undefined> = env()) =>
    deployAgent({ agentDir, target: "docker", name, network: "host", model: "scripted:conversations/hello.json", include: ["conversations"], readyTimeoutMs: 240_000, env: environment, ...extra });

  describe("assembly-line deploy --target docker", () => {
    let first: Awaited<ReturnType<typeof deployAgent>>;

    it("builds an image running `assembly-line start`, serves /readyz and a run, with secrets only in the container's environment", async () => {
      first = await deploy();
      expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await getJson(`${first.url}/readyz`, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
      const sent = await postJson(`${first.url}/message?wait=60`, { message: "hi" }, { authorization: `Bearer ${TOKEN}` });
      expect(sent.body).toMatchObject({ status: "completed", response: { text: "Hello from the release." } });
      expect(first.envNames).toEqual(expect.arrayContaining(["DATABASE_URL", "R2_ENDPOINT", "R2_SECRET_ACCESS_KEY", "ASSEMBLY_LINE_BEARER_TOKEN"]));
      expect(first.envNames).not.toContain("UNRELATED_HOST_SECRET");

      const image = await docker.getImage(first.details.image as string).inspect();
      expect(image.Config.Cmd).toEqual(["node", "/app/node_modules/@assemblyline-agents/node/bin/assembly-line.js", "start", "/app/agent/.assembly-line", "--model", "scripted:conversations/hello.json"]);
      // The secret is in the container's environment, and nowhere in the image (config or files).
      expect(JSON.stringify(image.Config.Env)).not.toContain(SECRET);
      const container = docker.getContainer(first.id);
      expect((await container.inspect()).Config.Env).toContain(`R2_SECRET_ACCESS_KEY=${SECRET}`);
      const history = await docker.getImage(first.details.image as string).history();
      expect(JSON.stringify(history)).not.toContain(SECRET);
    }, 600_000);

    it("replaces the previous container only once the new release is ready", async () => {
      writeFileSync(join(agentDir, "agent.ts"), readFileSync(join(agentDir, "agent.ts"), "utf8").replace("briefly.", "very briefly."));
      const second = await deploy();
      expect(second.id).not.toBe(first.id);
      expect(second.details.replaced).toEqual([first.id]);
      expect((await getJson(`${second.url}/readyz`, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
      const releases = await docker.listContainers({ all: true, filters: { label: [`${DEPLOY_LABEL}=${name}`] } });
      expect(releases.map((info) => info.Names[0])).toEqual([`/${second.id}`]);
      first = second;
    }, 600_000);

    it("rolls back a release that never gets ready: the previous one keeps serving", async () => {
      writeFileSync(join(agentDir, "agent.ts"), readFileSync(join(agentDir, "agent.ts"), "utf8").replace("very briefly.", "tersely."));
      const { DATABASE_URL: _dropped, ...withoutDatabase } = env();
      const error = await deploy({}, withoutDatabase).catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_DEPLOY_UNHEALTHY"), String(error)).toBe(true);
      // The release's own log says why: production boot refuses a missing DATABASE_URL.
      expect(String(error)).toMatch(/DATABASE_URL/);
      // It crashed at boot: the deploy says so instead of waiting out readyTimeoutMs while Docker restarts it.
      expect(String(error)).toMatch(/exited before it answered/);
      expect((await getJson(`${first.url}/readyz`, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
      const releases = await docker.listContainers({ all: true, filters: { label: [`${DEPLOY_LABEL}=${name}`] } });
      expect(releases.map((info) => info.Names[0])).toEqual([`/${first.id}`]);
    }, 600_000);

    it("rolls back a broken image build: nothing is replaced", async () => {
      const error = await deploy({ baseImage: "assembly-line-test/no-such-base:1" }).catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_DEPLOY_BUILD"), String(error)).toBe(true);
      expect((await getJson(`${first.url}/readyz`, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    }, 600_000);
  });
}
