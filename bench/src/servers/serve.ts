/** Common start/stop of the bare baselines: 127.0.0.1 only, port from argv (0 = any), the same "listening" line as mdp-server. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export function serve(name: string, server: Server, beforeClose: () => void = () => undefined): void {
  const port = Number(process.argv[2] ?? 0);
  server.listen(port, '127.0.0.1', () => {
    const address = server.address() as AddressInfo;
    process.stdout.write(`${name} listening on http://127.0.0.1:${address.port}\n`);
  });
  const stop = (): void => {
    beforeClose();
    server.closeAllConnections();
    server.close(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

/** `/skills/<clientId>/<rest>` → [clientId, '/<rest>'], without decoding or validation. */
export function splitSkillUrl(url: string): [string, string] | undefined {
  if (!url.startsWith('/skills/')) return undefined;
  const slash = url.indexOf('/', 8);
  if (slash < 0) return undefined;
  return [url.slice(8, slash), url.slice(slash)];
}
