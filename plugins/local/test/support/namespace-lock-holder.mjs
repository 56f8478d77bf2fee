// Opens the FileStateAdapter folder argv[2] and holds it until killed. Prints one JSON line:
// {"opened":true,"pid":<pid>} once the folder is open, or {"refused":"<error code>","message":"..."}
// (and exits) when the open fails. Run in a PID namespace of its own by folder-lock-namespaces.test.ts.
import { FileStateAdapter } from "@assemblyline-agents/local";

try {
  await FileStateAdapter.open({ directory: process.argv[2] });
  process.stdout.write(`${JSON.stringify({ opened: true, pid: process.pid })}\n`);
  setInterval(() => {}, 60_000);
} catch (error) {
  process.stdout.write(`${JSON.stringify({ refused: error?.code ?? String(error), message: error?.message })}\n`);
  process.exit(0);
}
