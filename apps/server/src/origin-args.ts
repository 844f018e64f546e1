/**
 * Which browsers may use the host API, the inspector and /mcp (the origin policy of `@mdp/core`):
 * a group of the settings table. The `--mcp-allow-*` names are kept as aliases, from when the
 * policy guarded /mcp alone.
 */
import * as v from 'valibot';
import { list } from './flag-values.js';
import type { MdpServerOptions } from './options.js';
import { settingGroup } from './settings.js';

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
  v.check(
    (values) => values.every(isOrigin),
    'must be origins like https://agent.example.com (a scheme, a host and a port, no path)',
  ),
);

export const ORIGIN_SETTINGS = settingGroup({
  title: 'Browsers (the host API, the inspector and /mcp refuse other sites\' pages and rebound DNS names)',
  settings: {
    allowOrigin: {
      flag: 'allow-origin',
      aliases: ['mcp-allow-origin'],
      placeholder: '<origin>',
      arity: 'list',
      schema: origins,
      help: `browser origin allowed besides loopback ones and the server's own pages (repeatable), e.g. a
        browser-based agent's`,
    },
    allowHost: {
      flag: 'allow-host',
      aliases: ['mcp-allow-host'],
      placeholder: '<host>',
      arity: 'list',
      schema: list('hosts'),
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
