import { adapterDescriptor, isAdapterDescriptor, type AdapterDescriptor } from "@assemblyline-agents/core";
import { DockerDeployTarget, type DockerDeployOptions } from "./deploy/docker-deploy-target.js";
import { DockerSandboxAdapter, type DockerSandboxAdapterOptions } from "./sandbox/docker-sandbox-adapter.js";
import type { DockerSandboxOptions } from "./sandbox/options.js";

/** The plugin id descriptors name; the kernel routes them to this package. */
export const DOCKER_PLUGIN_ID = "docker";

export type DockerSandboxDescriptor = AdapterDescriptor<"sandbox", DockerSandboxOptions>;
export type DockerDeployDescriptor = AdapterDescriptor<"deploy", DockerDeployOptions>;

/**
 * `sandbox: dockerSandbox({ image, network: "none" })` in gateway.ts, or the
 * default export of sandbox.ts: each run gets its own container with a physical
 * /workspace, created when a tool first needs it and removed at the run's end.
 */
export function dockerSandbox(options: DockerSandboxOptions): DockerSandboxDescriptor {
  return adapterDescriptor("sandbox", DOCKER_PLUGIN_ID, { ...options });
}

/**
 * `deploy: dockerDeploy()` in gateway.ts: `assembly-line deploy --target docker`
 * builds an image of the built agent (a generated Dockerfile running
 * `assembly-line start`), runs it with the gateway's env, waits for /readyz, and
 * only then removes the previous container.
 */
export function dockerDeploy(options: DockerDeployOptions = {}): DockerDeployDescriptor {
  return adapterDescriptor("deploy", DOCKER_PLUGIN_ID, { ...options });
}

/** The host's side of dockerSandbox(): a live adapter. */
export function createDockerSandbox(options: DockerSandboxDescriptor | DockerSandboxAdapterOptions, context: Pick<DockerSandboxAdapterOptions, "docker" | "agentDir" | "logger"> = {}): DockerSandboxAdapter {
  const resolved = isAdapterDescriptor(options) ? (options.options as DockerSandboxOptions) : options;
  return new DockerSandboxAdapter({ ...resolved, ...context });
}

/** The host's side of dockerDeploy(): a live deploy target. */
export function createDockerDeploy(options: DockerDeployDescriptor | DockerDeployOptions = {}): DockerDeployTarget {
  const resolved = isAdapterDescriptor(options) ? (options.options as DockerDeployOptions) : options;
  return new DockerDeployTarget(resolved);
}
