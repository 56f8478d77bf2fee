/** Helpers for deploy targets: import from "@assemblyline-agents/core/deploy". */
export { HOST_PACKAGE, checkIncludes, stageDeployBundle, type DeployBundle, type StageDeployBundleOptions } from "./stage-bundle.js";
export { waitForReady, type ReadyCheck } from "./wait-ready.js";
export { deployEnv, type DeployEnvOptions } from "./deploy-env.js";
export { gatewayChoosesState } from "./state-slot.js";
export { builtAgentId } from "./built-agent-id.js";
