export { FileStateAdapter, type FileStateAdapterOptions } from "./state/file-state.js";
export { LocalBlobStore, type LocalBlobStoreOptions } from "./blob/local-blob-store.js";
