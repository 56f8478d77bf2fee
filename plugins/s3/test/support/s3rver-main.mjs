// Runs s3rver in its own process (it needs --openssl-legacy-provider) and prints its port.
import S3rver from "s3rver";

const [directory, ...buckets] = process.argv.slice(2);
const server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory, configureBuckets: buckets.map((name) => ({ name })) });
const { port } = await server.run();
process.stdout.write(JSON.stringify({ port }) + "\n");
process.on("SIGTERM", () => server.close().then(() => process.exit(0)));
