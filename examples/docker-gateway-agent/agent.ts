import { defineAgent } from "@assemblyline-agents/core";

export default defineAgent({
  id: "docker-gateway-agent",
  name: "Workbench",
  description: "Runs shell work in a Docker sandbox with no network.",
  model: "openai/gpt-5.4-mini",
  instructions: "You do shell work for the user with bash, inside /workspace. Report what the commands printed, briefly.",
});
