export { DOCKER_PLUGIN_ID, createDockerDeploy, createDockerSandbox, dockerDeploy, dockerSandbox, type DockerDeployDescriptor, type DockerSandboxDescriptor } from "./gateway.js";
export { DockerSandboxAdapter, LABELS, type DockerSandboxAdapterOptions } from "./sandbox/docker-sandbox-adapter.js";
export { DockerSandbox } from "./sandbox/docker-sandbox.js";
export { TIMEOUT_EXIT_CODE } from "./sandbox/exec.js";
export { parseMemory, type DockerSandboxOptions } from "./sandbox/options.js";
export { DEPLOY_LABEL, DockerDeployTarget, type DockerDeployOptions, type DockerDeployResult } from "./deploy/docker-deploy-target.js";
export { renderDockerfile, renderRuntimeDockerfile } from "./deploy/dockerfile.js";
export { connectEngine, ensureImage, type DockerEngineOptions } from "./engine.js";
export { plugin } from "./plugin.js";
