import { defineAgent } from "@assemblyline-agents/core";

// The chaos suite's agent: every run calls apply_effect once, then answers.
// The suite forces a scripted model (script.json), so no API key is needed.
export default defineAgent({ id: "chaos-agent", model: "scripted:unused", defaultTools: ["apply_effect"] });
