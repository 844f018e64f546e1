/**
 * `pnpm --filter @mdp/server run deploy-binary DIR`: the `mdp-server` binary alone in a new folder,
 * from the bundle `pnpm build` makes (bundle.mjs): `bin/`, `dist/cli.js` and `dist/bundle/` with
 * their source maps, `LICENSE`, `README.md`, and a `package.json` without dependencies, since the
 * bundle holds every module the binary runs. About 10 MiB where `pnpm deploy --prod` makes 39 MiB:
 * that one also installs what `createMdpServer` (the library, `dist/index.js`) imports.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// `pnpm run deploy-binary -- DIR` may hand the script a literal `--`; pnpm runs it in this package's
// directory, so a relative DIR is taken from where the command was typed (INIT_CWD).
const args = process.argv.slice(2).filter((arg) => arg !== '--');
if (args.length !== 1 || args[0].startsWith('-')) {
  process.stderr.write('usage: pnpm --filter @mdp/server run deploy-binary <new folder>\n');
  process.exit(64);
}
const target = resolve(process.env.INIT_CWD ?? process.cwd(), args[0]);
if (existsSync(target) && readdirSync(target).length > 0) {
  process.stderr.write(`deploy-binary: ${target} is not empty\n`);
  process.exit(1);
}
if (!existsSync(join(here, 'dist/bundle/server.js'))) {
  process.stderr.write('deploy-binary: no bundle in dist/; run pnpm build first\n');
  process.exit(1);
}

const manifest = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));
mkdirSync(join(target, 'dist'), { recursive: true });
for (const path of ['bin', 'dist/cli.js', 'dist/cli.js.map', 'dist/bundle', 'LICENSE', 'README.md']) {
  cpSync(join(here, path), join(target, path), { recursive: true });
}
const { name, version, description, license, repository, engines, bin } = manifest;
writeFileSync(join(target, 'package.json'), `${JSON.stringify({ name, version, description, license, repository, engines, type: 'module', bin }, null, 2)}\n`);
process.stdout.write(`deploy-binary: mdp-server ${version} in ${target}; run it with node ${join(target, 'bin/mdp-server.js')}\n`);
