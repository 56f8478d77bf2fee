import { randomBytes } from "node:crypto";
import { PassThrough } from "node:stream";
import type Docker from "dockerode";
import tar from "tar-stream";

/*
 * File reads and writes inside a container, as the hosted sandboxes' own daemons do them
 * (E2B's envd, Daytona's toolbox), for the local fakes that stand in for those services.
 */

/**
 * Writes as those daemons do (os.OpenFile with O_CREATE|O_TRUNC): into the file already at the path,
 * following a symlink, through a hard link to its other names, and blocking on a FIFO; a new file
 * gets 0644. The bytes reach the container as an archive under a fresh name, then `cat` writes them.
 */
export async function writeInto(container: Docker.Container, destination: string, content: Buffer): Promise<void> {
  const staged = `al-fake-upload-${randomBytes(8).toString("hex")}`;
  const pack = tar.pack();
  pack.entry({ name: staged, size: content.length, mode: 0o600 }, content);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  await container.putArchive(Buffer.concat(chunks), { path: "/tmp" });
  const script = 'd=${2%/*}; mkdir -p -- "${d:-/}" && (umask 022; cat -- "$1" > "$2"); s=$?; rm -f -- "$1"; exit $s';
  const exec = await container.exec({ Cmd: ["sh", "-c", script, "sh", `/tmp/${staged}`, destination], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  stream.resume();
  await new Promise((resolve) => {
    stream.once("end", resolve);
    stream.once("close", resolve);
  });
  const { ExitCode } = await exec.inspect();
  if (ExitCode !== 0) throw new Error(`writing ${destination} exited with ${ExitCode}`);
}

/** The content of the regular file at `path`; undefined when nothing is there or it is not a regular file. */
export async function readFrom(container: Docker.Container, path: string): Promise<Buffer | undefined> {
  let archive: NodeJS.ReadableStream;
  try {
    archive = await container.getArchive({ path });
  } catch {
    return undefined;
  }
  const extract = tar.extract();
  let content: Buffer | undefined;
  let first = true;
  extract.on("entry", (header, stream, next) => {
    const chunks: Buffer[] = [];
    // tar-stream's entry is a streamx Readable, typed with unknown chunks; it emits Buffers.
    stream.on("data", (chunk: unknown) => chunks.push(chunk as Buffer));
    stream.on("end", () => {
      if (first && header.type === "file") content = Buffer.concat(chunks);
      first = false;
      next();
    });
  });
  await new Promise<void>((resolve, reject) => {
    extract.on("finish", resolve);
    extract.on("error", reject);
    archive.pipe(new PassThrough()).pipe(extract);
  });
  return content;
}
