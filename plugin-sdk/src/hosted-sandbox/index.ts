export { ShellSandbox, type SandboxDriver, type ShellSandboxDefaults } from "./shell-sandbox.js";
export { SandboxOpenings } from "./sandbox-openings.js";
