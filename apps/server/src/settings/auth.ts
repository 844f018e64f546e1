/** The settings of static tokens (`--auth-token`, `--auth-tokens-file`): a group of the settings table. */
import { readProblem, type ReadText } from './sources.js';
import { settingGroup, sourceLabel, type Source } from './table.js';
import { list, text } from './values.js';

export const AUTH_SETTINGS = settingGroup({
  title: 'Auth (off by default)',
  settings: {
    authToken: {
      flag: 'auth-token',
      placeholder: '<token>',
      arity: 'list',
      schema: list('tokens'),
      secret: true,
      envNames: ['MDP_AUTH_TOKENS'],
      fileKeys: ['authTokens'],
      help: `accept only credentials carrying this token (repeatable; MDP_AUTH_TOKENS and
        MDP_AUTH_TOKEN take a comma-separated list, a file an array). With it, the websocket
        (close 4401), HTTP loop connect and skill reads (401) need a token and the mdp_auth cookie
        is sealed (encrypted, one hour) with the keys in <state dir>/cookie-keys, which
        outlive restarts and every server of this state directory shares (mdp-server
        rotate-cookie-key rotates them)`,
    },
    authTokensFile: {
      flag: 'auth-tokens-file',
      placeholder: '<path>',
      schema: text(),
      help: 'also accept the tokens in this file: one per line, # starts a comment',
    },
  },
});

/** The accepted tokens: the setting's, then the tokens file's; or the error to print. */
export function tokensOf(
  values: { readonly authToken?: readonly string[] | undefined; readonly authTokensFile?: string | undefined },
  sources: Readonly<Record<string, Source>>,
  readFile: ReadText,
): readonly string[] | string {
  const tokens = [...(values.authToken ?? [])];
  const file = values.authTokensFile;
  if (file === undefined) return tokens;
  const label = sourceLabel(sources.authTokensFile!, AUTH_SETTINGS.settings.authTokensFile);
  let fromFile: string[];
  try {
    fromFile = parseTokensFile(readFile(file));
  } catch (error) {
    return `cannot read ${file} (${label}): ${readProblem(error)}`;
  }
  if (fromFile.length === 0) return `${file} (${label}) holds no tokens`;
  return [...tokens, ...fromFile];
}

/** Tokens from a tokens file: one per line; blank lines and `#` comments are skipped. */
export function parseTokensFile(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}
