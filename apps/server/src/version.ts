/**
 * The server's version, from its package.json. The bundled binary (`dist/cli.js`, made by
 * `bundle.mjs`) has it written in at build time, since its code no longer sits at the path the
 * relative read below expects; the tsc build (the library, `dist/index.js`) reads the file.
 */
import { readFileSync } from 'node:fs';

/** Replaced by the bundler (esbuild `define`) with the version as a string literal. */
declare const MDP_SERVER_VERSION: string | undefined;

function fromPackageJson(): string {
  // dist/version.js (or src/version.ts under tests) → the package's own package.json.
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

export const SERVER_VERSION: string = typeof MDP_SERVER_VERSION === 'string' ? MDP_SERVER_VERSION : fromPackageJson();
