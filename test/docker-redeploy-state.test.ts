import { cpSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEPLOY_LABEL } from "@assemblyline-agents/docker";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { deployAgent } from "../plugins/node/src/cli/commands/deploy.js";
import { baseImages, probeEngine } from "../plugins/docker/test/support/engine.js";
import { getJson, postJson } from "./support/agent-server.js";

const TOKEN = "docker-state-token-8e21";
const NOTES_AGENT = resolve(import.meta.dirname, "../examples/notes-agent");
const REPO_MODULES = resolve(import.meta.dirname, "../node_modules");

/** The engine's events about `container` between two instants (seconds), read to the end. */
async function containerEvents(docker: Docker, container: string, since: number, until: number): Promise<Array<{ Action: string; Actor: { Attributes: Record<string, string> } }>> {
  const stream = (await docker.getEvents({ since, until, filters: { container: [container] } })) as NodeJS.ReadableStream;
  let text = "";
  for await (const chunk of stream) text += chunk.toString();
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line));
}

const probe = await probeEngine("docker redeploys keep the runs");

if (probe.available) {
  const { docker } = probe;
  const name = `al-state-${Date.now().toString(36)}`;
  const volume = `assembly-line-${name}-state`;
  let root: string;
  let agentDir: string;

  beforeAll(async () => {
    const images = await baseImages(docker);
    await docker.getImage("node:22-slim").inspect().catch(() => docker.getImage(images.node).tag({ repo: "node", tag: "22-slim" }));
    // The notes example has no gateway.ts: its runs are kept in the default file state.
    root = mkdtempSync(join(tmpdir(), "al-docker-state-agent-"));
    agentDir = join(root, "agent");
    cpSync(NOTES_AGENT, agentDir, { recursive: true, filter: (source) => !source.includes(".assembly-line") });
    symlinkSync(REPO_MODULES, join(root, "node_modules"));
  }, 300_000);

  afterAll(async () => {
    const containers = await docker.listContainers({ all: true, filters: { label: [`${DEPLOY_LABEL}=${name}`] } });
    await Promise.all(containers.map((info) => docker.getContainer(info.Id).remove({ force: true }).catch(() => undefined)));
    for (const image of await docker.listImages({ filters: { reference: [`${name}:*`] } })) {
      for (const tag of image.RepoTags ?? []) await docker.getImage(tag).remove({ force: true }).catch(() => undefined);
    }
    await docker.getVolume(volume).remove().catch(() => undefined);
    if (root) rmSync(root, { recursive: true, force: true });
  }, 180_000);

  const deploy = (env: Record<string, string> = {}) =>
    deployAgent({
      agentDir,
      target: "docker",
      name,
      network: "host",
      model: "scripted:conversations/remember-milk.json",
      include: ["conversations"],
      readyTimeoutMs: 240_000,
      env: { ASSEMBLY_LINE_BEARER_TOKEN: TOKEN, ...env },
    });
  const auth = { authorization: `Bearer ${TOKEN}` };

  describe("assembly-line deploy --target docker keeps the runs across releases", () => {
    let serving: Awaited<ReturnType<typeof deployAgent>>;
    let runId: string;

    it("approves, in the next release's container, a run paused in the one before, which was stopped and drained, not killed", async () => {
      const since = Math.floor(Date.now() / 1000) - 1;
      const first = await deploy();
      expect(first.details.stateVolume).toBe(volume);
      const image = await docker.getImage(first.details.image as string).inspect();
      expect(image.Config.Cmd).toEqual(expect.arrayContaining(["start", "/app/agent/.assembly-line", "--state-dir", "/var/lib/assembly-line/state"]));
      const paused = await postJson(`${first.url}/message?wait=60`, { message: "Remember to buy milk" }, auth);
      expect(paused.body.status, JSON.stringify(paused.body)).toBe("waiting_approval");
      runId = paused.body.runId as string;
      const callId = paused.body.pendingApprovals[0].approvalId as string;

      const second = await deploy();
      expect(second.details.replaced).toEqual([first.id]);
      const approved = await postJson(`${second.url}/runs/${runId}/approve`, { callId }, auth);
      expect(approved.status, JSON.stringify(approved.body)).toBe(200);
      expect(approved.body, JSON.stringify(approved.body)).toMatchObject({ status: "completed", response: { text: 'Noted: "Buy milk on the way home". It\'s the only note about milk.' } });

      // The first release got SIGTERM and ended on its own after the host's drain (exit 0), before it was removed.
      const events = await containerEvents(docker, first.id, since, Math.floor(Date.now() / 1000) + 1);
      const died = events.filter((event) => event.Action === "die");
      expect(died.map((event) => event.Actor.Attributes.exitCode), JSON.stringify(events.map((event) => event.Action))).toEqual(["0"]);
      expect(events.filter((event) => event.Action === "kill").map((event) => event.Actor.Attributes.signal)).toEqual(["15"]);
      expect((await docker.getVolume(volume).inspect()).Name).toBe(volume);
      serving = second;
    }, 900_000);

    it("starts the release it stopped again, on the same runs, when the new one never gets ready", async () => {
      // The host refuses this at boot, so the release exits before it answers /readyz.
      const error = await deploy({ ASSEMBLY_LINE_MAX_CONCURRENT_RUNS: "0" }).catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_DEPLOY_UNHEALTHY"), String(error)).toBe(true);
      const releases = await docker.listContainers({ filters: { label: [`${DEPLOY_LABEL}=${name}`] } });
      expect(releases.map((info) => info.Names[0])).toEqual([`/${serving.id}`]);
      const run = await getJson(`${serving.url}/runs/${runId}`, auth);
      expect(run.status, JSON.stringify(run.body)).toBe(200);
      expect(run.body.run).toMatchObject({ id: runId, status: "completed" });
    }, 900_000);
  });
}
