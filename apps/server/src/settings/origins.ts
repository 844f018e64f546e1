/**
 * Which browsers may use the host API, the inspector and /mcp (the origin policy of `@mdp/core`):
 * a group of the settings table. The `--mcp-allow-*` names are kept as aliases, from when the
 * policy guarded /mcp alone.
 */
import * as v from 'valibot';
import { hostnameOf } from '@mdp/core';
import { list } from './values.js';
import type { MdpServerOptions } from './options.js';
import { settingGroup } from './table.js';

function isOrigin(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && (url.pathname === '/' || url.pathname === '') && !url.search && !url.hash;
  } catch {
    return false;
  }
}

/** A list of browser origins (`https://agent.example.com`). */
const origins = v.pipe(
  list('origins'),
  v.check((values) => values.every(isOrigin), 'must be origins like https://agent.example.com (a scheme, a host and a port, no path)'),
);

/**
 * Whether `text` is a bare host name as the Host check compares it: no scheme, port, path or
 * user (the check drops the port of a Host header and compares the name alone, so
 * `example.com:8080` or `http://example.com` could never match anything).
 */
function isHostName(text: string): boolean {
  return hostnameOf(text) === text.trim().toLowerCase();
}

/** A list of Host names (`agent.example.com`, `[fd00::1]`). */
const hosts = v.pipe(
  list('hosts'),
  v.check((values) => values.every(isHostName), 'must be host names like box.lan or [fd00::1] (no scheme, no port: the port of a Host header is not compared)'),
);

export const ORIGIN_SETTINGS = settingGroup({
  title: "Browsers (the host API, the inspector and /mcp refuse other sites' pages and rebound DNS names)",
  settings: {
    allowOrigin: {
      flag: 'allow-origin',
      aliases: ['mcp-allow-origin'],
      placeholder: '<origin>',
      arity: 'list',
      schema: origins,
      help: `browser origin allowed besides loopback ones and the server's own pages (repeatable), e.g. a
        browser-based agent's; the mdp_auth cookie counts from the same pages only`,
    },
    allowHost: {
      flag: 'allow-host',
      aliases: ['mcp-allow-host'],
      placeholder: '<host>',
      arity: 'list',
      schema: hosts,
      help: `Host name allowed besides loopback names (repeatable); on a server bound beyond loopback,
        the only names allowed once one is given`,
    },
  },
});

/** The options of the settings' values. */
export function originOptions(values: {
  readonly allowOrigin?: readonly string[] | undefined;
  readonly allowHost?: readonly string[] | undefined;
}): Pick<MdpServerOptions, 'allowedOrigins' | 'allowedHosts'> {
  return {
    ...(values.allowOrigin ? { allowedOrigins: values.allowOrigin } : {}),
    ...(values.allowHost ? { allowedHosts: values.allowHost } : {}),
  };
}
