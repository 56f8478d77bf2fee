export { FileStateAdapter, type FileStateAdapterOptions } from "./state/file-state.js";
