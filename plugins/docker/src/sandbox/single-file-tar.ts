import tar from "tar-stream";

/** A tar archive holding one regular file, for the engine's put-archive call. */
export async function pack(name: string, content: Buffer): Promise<Buffer> {
  const archive = tar.pack();
  archive.entry({ name, size: content.length, mode: 0o644, mtime: new Date() }, content);
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of archive) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
