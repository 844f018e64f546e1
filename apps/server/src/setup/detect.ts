/** Which agent hosts are installed, and how we know: a command on PATH or a config folder. */
import { HOST_IDS, HOSTS, type HostId, type SetupPlace } from './hosts.js';

export interface Probes {
  exists(path: string): Promise<boolean>;
  which(command: string): Promise<string | undefined>;
}

export interface FoundHost {
  readonly id: HostId;
  /** Said to the user: "claude on PATH (/usr/local/bin/claude)" or "/home/u/.cursor exists". */
  readonly how: string;
}

export async function detectHosts(place: SetupPlace, probes: Probes): Promise<FoundHost[]> {
  const found: FoundHost[] = [];
  for (const id of HOST_IDS) {
    const how = await detectOne(id, place, probes);
    if (how) found.push({ id, how });
  }
  return found;
}

async function detectOne(id: HostId, place: SetupPlace, probes: Probes): Promise<string | undefined> {
  const host = HOSTS[id];
  for (const command of host.commands) {
    const path = await probes.which(command);
    if (path) return `${command} on PATH (${path})`;
  }
  for (const marker of host.markers(place)) {
    if (await probes.exists(marker)) return `${marker} exists`;
  }
  return undefined;
}
