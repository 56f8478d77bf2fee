export { ShellSandbox, type SandboxDriver, type ShellSandboxDefaults } from "./shell-sandbox.js";
