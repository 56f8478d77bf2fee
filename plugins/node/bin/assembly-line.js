#!/usr/bin/env node
import { main } from "../dist/cli/main.js";

// A reader that stops early (`| head`) closes the pipe: stop quietly rather than crash on EPIPE.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error) => {
    if (error.code !== "EPIPE") throw error;
    process.exit(process.exitCode ?? 0);
  });
}

process.exitCode = await main(process.argv.slice(2));
