// `npm start`: one turn of the notes example. The run pauses for an approval, which
// the command line reports with exit code 3; here that is the expected end of the demo,
// so npm does not print it as a failure. Every other code passes through.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const bin = fileURLToPath(new URL("../plugins/node/bin/assembly-line.js", import.meta.url));
const args = ["run", "examples/notes-agent", "--message", "Remember to buy milk", "--offline-script", "examples/notes-agent/conversations/remember-milk.json"];
const PAUSED = 3;
const { status, error } = spawnSync(process.execPath, [bin, ...args], { stdio: "inherit" });
if (error) throw error;
process.exitCode = status === PAUSED ? 0 : (status ?? 1);
