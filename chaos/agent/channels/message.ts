import { defineChannel } from "@assemblyline-agents/core";

// A raw HTTP route: the host's default message fallback reads { message, conversationId? }.
// Open in `assembly-line dev`; in production it needs ASSEMBLY_LINE_BEARER_TOKEN.
export default defineChannel({
  transport: "http",
  route: "/message",
  methods: ["POST"],
});
