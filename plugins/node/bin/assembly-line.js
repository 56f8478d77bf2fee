#!/usr/bin/env node
import { main } from "../dist/cli/main.js";

// A reader that stops early (`| head`) closes the pipe: the output stops quietly, the command does
// not. Exiting here would leave a run half done (queued, its --approve decision never given).
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error) => {
    if (error.code !== "EPIPE") throw error;
    stream.write = () => true;
  });
}

process.exitCode = await main(process.argv.slice(2));
