/** Binary object storage (local files, S3, R2). */
export interface BlobStore {
  put(key: string, body: Uint8Array, options?: { contentType?: string }): Promise<{ key: string; size: number }>;
  /** undefined when the key does not exist. */
  get(key: string): Promise<{ body: Uint8Array; contentType: string } | undefined>;
  delete(key: string): Promise<void>;
  list(prefix?: string): Promise<string[]>;
}
