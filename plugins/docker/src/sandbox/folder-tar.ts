import tar from "tar-stream";

/** A tar archive of empty folders (parents first) owned by `owner`: extracted over existing ones, it changes their owner. */
export async function packFolders(names: string[], owner: { uid: number; gid: number }): Promise<Buffer> {
  const archive = tar.pack();
  for (const name of names) archive.entry({ name, type: "directory", mode: 0o755, mtime: new Date(), uid: owner.uid, gid: owner.gid });
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of archive) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
