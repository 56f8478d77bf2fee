export { createConnections, type ConnectionsOptions } from "./connections.js";
export { EncryptedGrantStore, type EncryptedGrantStoreOptions, type GrantStore } from "./grants.js";
export { defineHttpConnection, defineMcpConnection, defineOpenApiConnection } from "@assemblyline-agents/core";
