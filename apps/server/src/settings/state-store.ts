/**
 * The state store's settings (the reference server's `--state-store` and `--state-store-dir`), a
 * group of the settings table. Giving the directory turns the store on, as there; an explicit
 * `false` (`MDP_STATE_STORE=false`, `"stateStore": false`) keeps it off whatever the directory.
 */
import { resolve } from 'node:path';
import { DEFAULT_STATE_STORE_DIR } from '../features/state-store.js';
import { text, toggle } from './values.js';
import type { MdpServerOptions } from './options.js';
import { settingGroup } from './table.js';

export const STATE_STORE_SETTINGS = settingGroup({
  title: 'State store (off by default)',
  settings: {
    stateStore: {
      flag: 'state-store',
      arity: 'switch',
      schema: toggle(),
      defaultText: 'off; on when --state-store-dir is given',
      help: `write a diagnostic snapshot of this node in four JSON files: snapshot.json (server, cluster
        view, counts), clients.json, routes.json and services.json (its URLs); each is replaced whole
        when clients come, change or go, at most four times a second, and is readable by this user
        only`,
    },
    stateStoreDir: {
      flag: 'state-store-dir',
      placeholder: '<dir>',
      schema: text(),
      defaultText: `./${DEFAULT_STATE_STORE_DIR}, under the directory the server starts in`,
      help: 'where the state store writes (made 0700 if missing); giving it turns the store on',
    },
  },
});

/** The option of the settings' values; a relative directory is taken from `cwd` (the start directory). */
export function stateStoreOptions(
  values: { readonly stateStore?: boolean | undefined; readonly stateStoreDir?: string | undefined },
  cwd: string = process.cwd(),
): Pick<MdpServerOptions, 'stateStore'> {
  const on = values.stateStore ?? values.stateStoreDir !== undefined;
  return on ? { stateStore: { dir: resolve(cwd, values.stateStoreDir ?? DEFAULT_STATE_STORE_DIR) } } : {};
}
