import type Docker from "dockerode";
import tar from "tar-stream";

/*
 * envd runs every command as `/bin/bash -l -c <cmd>`, and E2B templates have
 * bash. The busybox test image's bash is only a symlink busybox does not
 * answer to, so the test template adds a /bin/bash that hands over to
 * busybox's POSIX shell (which takes -l and -c), committed once per base image.
 */
export async function e2bTemplateImage(docker: Docker, base: string): Promise<string> {
  const reference = `assembly-line-test/e2b-template:${base.split(":").pop()}`;
  try {
    await docker.getImage(reference).inspect();
    return reference;
  } catch {
    // Not made yet.
  }
  const container = await docker.createContainer({ Image: base, Cmd: ["/bin/sh"] });
  try {
    const pack = tar.pack();
    const script = '#!/bin/sh\nexec /bin/sh "$@"\n';
    pack.entry({ name: "bash", size: Buffer.byteLength(script), mode: 0o755 }, script);
    pack.finalize();
    const chunks: Buffer[] = [];
    for await (const chunk of pack) chunks.push(chunk as Buffer);
    await container.putArchive(Buffer.concat(chunks), { path: "/bin" });
    const [repo, tag] = [reference.slice(0, reference.lastIndexOf(":")), reference.slice(reference.lastIndexOf(":") + 1)];
    await container.commit({ repo, tag });
  } finally {
    await container.remove({ force: true });
  }
  return reference;
}
