import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "plugin-sdk/test/**/*.test.ts", "kernel/test/**/*.test.ts", "plugins/*/test/**/*.test.ts", "registry/test/**/*.test.ts"],
    exclude: ["**/node_modules/**", "**/dist/**"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    setupFiles: ["test/setup/kernel-host.ts"],
  },
});
