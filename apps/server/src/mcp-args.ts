/** The MCP flags of `mdp-server` and `mdp-server mcp` (SPEC §13), parsed into MdpMcpOptions. */
import { CATALOG_DEFAULTS, GENERIC_TOOL_NAMES, SURFACES, type SurfaceMode } from '@mdp/mcp-bridge';
import type { MdpMcpOptions } from './features/mcp-http.js';
import { wholeNumber } from './flag-values.js';

export const MCP_HELP = `MCP (agents: Streamable HTTP at /mcp; stdio with "mdp-server mcp"):
  --mcp-surface <mode>             ${SURFACES.join(' | ')} (default ${CATALOG_DEFAULTS.surface}): catalog lists every endpoint as a
                                   tool, every prompt as a prompt and every skill as a resource, besides
                                   the four generic tools (listClients, listPaths, callPath, callPaths)
  --mcp-max-tools <n>              most tools listed, the generic ones included (default ${CATALOG_DEFAULTS.maxTools});
                                   past it the generic tools still reach every path
  --mcp-include <glob>             list only catalog items whose name or <clientId><path> matches
                                   (repeatable; * matches anything, ? one character)
  --mcp-exclude <glob>             leave out catalog items that match (repeatable)
  --mcp-allow-origin <origin>      browser origin allowed at /mcp besides loopback ones (repeatable)
  --mcp-allow-host <host>          Host name allowed at /mcp besides loopback names (repeatable)`;

export const MCP_ARG_OPTIONS = {
  'mcp-surface': { type: 'string' },
  'mcp-max-tools': { type: 'string' },
  'mcp-include': { type: 'string', multiple: true },
  'mcp-exclude': { type: 'string', multiple: true },
  'mcp-allow-origin': { type: 'string', multiple: true },
  'mcp-allow-host': { type: 'string', multiple: true },
} as const;

type Values = Readonly<Record<string, string | boolean | string[] | undefined>>;

/** MCP options from parsed flag values; a string is the error to print, undefined when no MCP flag was given. */
export function parseMcpArgs(values: Values): MdpMcpOptions | string | undefined {
  if (!Object.keys(MCP_ARG_OPTIONS).some((flag) => values[flag] !== undefined)) return undefined;
  const options: MdpMcpOptions = {};
  const surface = values['mcp-surface'];
  if (typeof surface === 'string') {
    if (!(SURFACES as readonly string[]).includes(surface)) return `--mcp-surface must be one of ${SURFACES.join(', ')}, got ${JSON.stringify(surface)}`;
    options.surface = surface as SurfaceMode;
  }
  const max = values['mcp-max-tools'];
  if (typeof max === 'string') {
    const parsed = wholeNumber('mcp-max-tools', max, GENERIC_TOOL_NAMES.length, 10_000);
    if (typeof parsed === 'string') return parsed;
    options.maxTools = parsed;
  }
  const lists = [
    ['mcp-include', 'include'],
    ['mcp-exclude', 'exclude'],
    ['mcp-allow-origin', 'allowedOrigins'],
    ['mcp-allow-host', 'allowedHosts'],
  ] as const;
  for (const [flag, key] of lists) {
    const items = (values[flag] as string[] | undefined)?.map((item) => item.trim());
    if (!items) continue;
    if (items.some((item) => item === '')) return `--${flag} must not be empty`;
    options[key] = items;
  }
  const origin = options.allowedOrigins?.find((item) => !isOrigin(item));
  if (origin !== undefined) return `--mcp-allow-origin must be an origin like https://agent.example.com, got ${JSON.stringify(origin)}`;
  return options;
}

function isOrigin(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && (url.pathname === '/' || url.pathname === '') && !url.search && !url.hash;
  } catch {
    return false;
  }
}
