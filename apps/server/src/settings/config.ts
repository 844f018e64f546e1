/** The settings about settings: the config file, `--print-config`, `--help` and `--version`. A group of the settings table. */
import { settingGroup } from './table.js';
import { text, toggle } from './values.js';

export const CONFIG_SETTINGS = settingGroup({
  title: 'Configuration',
  settings: {
    config: {
      flag: 'config',
      placeholder: '<file>',
      schema: text(),
      sources: ['env'],
      help: 'read settings from this JSON file (comments allowed); keys are the flags in camelCase',
    },
    printConfig: {
      flag: 'print-config',
      arity: 'switch',
      schema: toggle(),
      sources: [],
      help: 'print the settings in effect, and where each came from, as a config file\n(secrets hidden), then exit',
    },
    help: { flag: 'help', short: 'h', arity: 'switch', schema: toggle(), sources: [], help: 'show this help' },
    version: { flag: 'version', short: 'v', arity: 'switch', schema: toggle(), sources: [], help: 'print the version' },
  },
});
