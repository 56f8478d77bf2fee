export { FOLDER_REFUSALS, folderRefusalError, type FolderRefusal } from "./folder-refusal.js";
export { ShellSandbox, type SandboxDriver, type ShellSandboxDefaults } from "./shell-sandbox.js";
export { SandboxOpenings } from "./sandbox-openings.js";
export { KILL_LEFTOVERS, PID_DIR, tracked } from "./leftover-commands.js";
export { MAX_READ_BYTES, checkReadSize, sizeScript } from "./read-limit.js";
export { SandboxSuccession, successiveSandbox } from "./sandbox-succession.js";
