import { isAssemblyLineError } from "@assemblyline-agents/core";
import { describe, expect, it } from "vitest";
import { createDockerDeploy, dockerDeploy } from "../src/index.js";

describe("dockerDeploy() options", () => {
  it.each([
    [{ network: "none" }, "network"],
    [{ readyTimeoutMs: 0 }, "readyTimeoutMs"],
    [{ baseimage: "node:22-slim" }, "baseimage"],
    [{ port: 70_000 }, "port"],
    [{ keepReleases: 0 }, "keepReleases"],
    [{ keepReleases: 2.5 }, "keepReleases"],
    [{ keepReleases: "3" }, "keepReleases"],
    // A string would be spread letter by letter into the release's CMD.
    [{ startArgs: "--model x" }, "startArgs"],
    [{ packages: "pg" }, "packages"],
    [{ include: "prompts/" }, "include"],
    [{ baseImage: "" }, "baseImage"],
    [{ hostIp: 127 }, "hostIp"],
  ])("refuses %j with AL_ERR_DEPLOY_CONFIG naming %s before anything is built", (options, named) => {
    let error: unknown;
    try {
      createDockerDeploy(dockerDeploy(options as never));
    } catch (caught) {
      error = caught;
    }
    expect(isAssemblyLineError(error, "AL_ERR_DEPLOY_CONFIG"), String(error)).toBe(true);
    expect(String(error)).toContain(named);
  });

  it("accepts bridge, host and a named network", () => {
    for (const network of ["bridge", "host", "agents_net"]) expect(createDockerDeploy(dockerDeploy({ network })).name).toBe("docker");
  });

  it("accepts keepReleases of 1 or more", () => {
    for (const keepReleases of [1, 3, 10]) expect(createDockerDeploy(dockerDeploy({ keepReleases })).name).toBe("docker");
  });
});
