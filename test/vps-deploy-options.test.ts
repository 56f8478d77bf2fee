import { describe, expect, it } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { PlatformDeployTarget } from "../plugins/node/src/deploy/platform-deploy-target.js";
import { VpsDeployTarget, systemdUnit, type VpsDeployOptions } from "../plugins/node/src/deploy/vps-deploy-target.js";

function refusal(make: () => unknown): unknown {
  try {
    make();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("vps and platform deploy options are checked when the target is made", () => {
  it.each([
    [{ port: 0 }, "vps port 0 is not a port number"],
    [{ port: 3000.5 }, "vps port 3000.5 is not a port number"],
    [{ sshPort: 70_000 }, "vps sshPort 70000 is not a port number"],
    [{ sshPort: "22" }, 'vps sshPort "22" is not a port number'],
    [{ readyTimeoutMs: Number.NaN }, "vps readyTimeoutMs NaN is not a positive whole number of milliseconds"],
    [{ readyTimeoutMs: 0 }, "vps readyTimeoutMs 0 is not a positive whole number of milliseconds"],
    [{ readyTimeoutMs: 2 ** 31 }, "vps readyTimeoutMs 2147483648 is not a positive whole number of milliseconds"],
    // Once silently the detached-process manager, even on a host with systemd.
    [{ serviceManager: "systemd-user" }, 'vps serviceManager "systemd-user" is not systemd or process'],
  ])("refuses vps %j with AL_ERR_DEPLOY_CONFIG", (options, message) => {
    const error = refusal(() => new VpsDeployTarget({ host: "203.0.113.1", ...(options as Partial<VpsDeployOptions>) }));
    expect(isAssemblyLineError(error, "AL_ERR_DEPLOY_CONFIG"), String(error)).toBe(true);
    expect(String(error)).toContain(message);
    expect((error as { details?: unknown }).details).toEqual({ option: Object.keys(options)[0] });
  });

  it("accepts the bounds and both service managers", () => {
    for (const options of [{ port: 1, sshPort: 65_535, readyTimeoutMs: 1 }, { serviceManager: "systemd" as const }, { serviceManager: "process" as const }]) {
      expect(new VpsDeployTarget({ host: "203.0.113.1", ...options }).name).toBe("vps");
    }
  });

  it.each([0, 70_000, Number.NaN, 80.5])("refuses fly and railway port %s with AL_ERR_DEPLOY_CONFIG", (port) => {
    for (const platform of ["fly", "railway"] as const) {
      const error = refusal(() => new PlatformDeployTarget({ platform, port }));
      expect(isAssemblyLineError(error, "AL_ERR_DEPLOY_CONFIG"), String(error)).toBe(true);
      expect(String(error)).toContain(`${platform} deploy port ${port} is not a port number`);
    }
    expect(new PlatformDeployTarget({ platform: "fly", port: 8080 }).name).toBe("fly");
  });
});

describe("the systemd unit of a vps release", () => {
  it("writes `%` and `$` so that systemd passes them on as they are: %% wherever it expands specifiers, $$ in ExecStart", () => {
    const dir = "/srv/agents/50%-$HOME";
    const unit = systemdUnit({ name: "support", dir }, ["/opt/node/bin/node", `${dir}/current/cli.js`, "start", "--model", "scripted:conversations/100%$USER.json", "--note", "a $b %c"]);
    expect(unit).toContain("WorkingDirectory=/srv/agents/50%%-$HOME/current/agent\n");
    expect(unit).toContain("EnvironmentFile=/srv/agents/50%%-$HOME/env\n");
    expect(unit).toContain('ExecStart=/opt/node/bin/node /srv/agents/50%%-$$HOME/current/cli.js start --model scripted:conversations/100%%$$USER.json --note "a $$b %%c"\n');
  });

  it("quotes words with spaces, quotes or backslashes, and escapes a lone `;`", () => {
    const unit = systemdUnit({ name: "support", dir: "/opt/assembly-line/support" }, ["/usr/bin/node", "start", "it's", 'say "hi"', "a\\b", ";"]);
    expect(unit).toContain(`ExecStart=/usr/bin/node start "it's" "say \\"hi\\"" "a\\\\b" \\;\n`);
  });
});
