import { defineConfig } from "vitest/config";

// Its own config, so `npm test` here runs only this package's tests.
export default defineConfig({ test: { include: ["test/**/*.test.js"] } });
