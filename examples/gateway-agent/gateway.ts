import { defineGateway } from "@assemblyline-agents/core";
import { jsonFileState } from "@acme/assembly-line-jsonfile";

// State from a third-party plugin package: runs and conversations in one JSON
// file, <agent>/.assembly-line/state.json. The host finds the package by the
// plugin id in its descriptor ("jsonfile") and checks it before booting.
export default defineGateway({
  state: jsonFileState(),
});
