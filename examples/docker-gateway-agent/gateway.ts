import { adapter, defineGateway } from "@assemblyline-agents/core";
import { dockerDeploy, dockerSandbox } from "@assemblyline-agents/docker";
import { neonPostgres } from "@assemblyline-agents/postgres";
import { r2Blob } from "@assemblyline-agents/s3";

// The gateway of the spec's "Gateway Adapters" section, unchanged.
export default defineGateway({
  deploy: dockerDeploy(),
  runtime: adapter("node"),
  state: neonPostgres(),
  blob: r2Blob(),
  sandbox: dockerSandbox({ image: "node:22-slim", network: "none" }),
  scheduler: adapter("local"),
});
