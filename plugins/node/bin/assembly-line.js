#!/usr/bin/env node
import { main, stoppedDrivingARun } from "../dist/cli/main.js";

// A reader that stops early (`| head`) closes the pipe: the output stops quietly, the command does
// not. Exiting here would leave a run half done (queued, its --approve decision never given).
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error) => {
    if (error.code !== "EPIPE") throw error;
    stream.write = () => true;
  });
}

const code = await main(process.argv.slice(2));
// A code already set stands: the signal handler's 1 for a shutdown that failed must not become a 0.
if (!process.exitCode) process.exitCode = code;
// Ctrl-C stopped a command mid-run and it reported the run as left for resume: the turn still
// executing here is not waited for (the runtime cannot abort it part way; resume continues it).
if (stoppedDrivingARun()) process.exit();
