/** Helpers for deploy targets: import from "@assemblyline-agents/core/deploy". */
export { HOST_PACKAGE, stageDeployBundle, type DeployBundle, type StageDeployBundleOptions } from "./stage-bundle.js";
export { waitForReady, type ReadyCheck } from "./wait-ready.js";
export { deployEnv, type DeployEnvOptions } from "./deploy-env.js";
