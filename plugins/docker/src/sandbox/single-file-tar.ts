import tar from "tar-stream";

/** A tar archive holding one regular file with `entry`'s mode and owner (the engine extracts as root and keeps the entry's ids). */
export async function pack(name: string, content: Buffer, entry: { mode?: number; uid: number; gid: number } = { uid: 0, gid: 0 }): Promise<Buffer> {
  const archive = tar.pack();
  archive.entry({ name, size: content.length, mode: entry.mode ?? 0o644, mtime: new Date(), uid: entry.uid, gid: entry.gid }, content);
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of archive) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A tar archive of empty folders (parents first) owned by `owner`: extracted over existing ones, it changes their owner. */
export async function packFolders(names: string[], owner: { uid: number; gid: number }): Promise<Buffer> {
  const archive = tar.pack();
  for (const name of names) archive.entry({ name, type: "directory", mode: 0o755, mtime: new Date(), uid: owner.uid, gid: owner.gid });
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of archive) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
