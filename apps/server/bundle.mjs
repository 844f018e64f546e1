/**
 * The bundled binary, the last step of `pnpm build` (after tsc): `src/cli.ts` and what reading the
 * command line needs, as `dist/cli.js`, and what only some commands need (the server, the MCP bridge
 * and its SDK, `setup`, `rotate-cookie-key`), with the workspace packages and npm dependencies they
 * import, as `dist/bundle/<name>.js` and shared chunks, imported when a command runs. It replaces
 * tsc's `dist/cli.js` (the launcher, the systemd unit, the container and agents' hosts' entries
 * name that file); every other file of `dist/` stays tsc's, and `dist/index.js` (the library) still
 * imports its dependencies.
 *
 * Why: node resolves, reads and compiles each module file on its own, and the unbundled binary was
 * about 500 of them before `mdp-server mcp` could answer `initialize` (README, "Start-up").
 *
 * Source maps are kept (`*.js.map`, with the TypeScript sources of this package and of the
 * workspace packages, read through their own maps, and their text): `node --enable-source-maps
 * dist/cli.js` gives stack traces in the sources, wherever the binary was copied. The bundles'
 * comments are made ASCII after the builds (`ascii-comments.mjs`), so that node reads each file
 * as a one-byte string.
 */
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { NODE_BUNDLE } from './bundle-options.mjs';
import { asciiComments } from './ascii-comments.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');
const chunks = join(dist, 'bundle');
const { version } = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));

/**
 * `@mdp/inspector` reads its page scripts from `../dist/page/` beside its own module and marked's
 * ES module build through its own `require.resolve`; in a chunk both would point at nothing. The
 * chunk reads them from `dist/bundle/inspector/` instead, where they are copied. Each replaced
 * expression must be found exactly once, so a change in the inspector fails the build, not a page.
 */
const inspectorAssets = {
  name: 'inspector-assets',
  setup(b) {
    b.onLoad({ filter: /[\\/]inspector[\\/]dist[\\/]assets\.js$/ }, (args) => {
      let source = readFileSync(args.path, 'utf8');
      const replacements = [
        ["new URL('../dist/page/', import.meta.url)", "new URL('./inspector/page/', import.meta.url)"],
        ["createRequire(import.meta.url).resolve('marked')", "fileURLToPath(new URL('./inspector/marked.js', import.meta.url))"],
      ];
      for (const [from, to] of replacements) {
        if (source.split(from).length !== 2) throw new Error(`bundle.mjs: ${args.path} no longer has exactly one ${from}`);
        source = source.replace(from, to);
      }
      const into = join(chunks, 'inspector');
      mkdirSync(join(into, 'page'), { recursive: true });
      const page = join(dirname(args.path), 'page');
      for (const file of readdirSync(page).filter((name) => name.endsWith('.js'))) copyFileSync(join(page, file), join(into, 'page', file));
      copyFileSync(createRequire(args.path).resolve('marked'), join(into, 'marked.js'));
      return { contents: source, loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};

/**
 * npm packages' own source maps are not followed: some name sources their package does not ship
 * (the MCP SDK's name its `src/*.ts`), which would leave the bundle's map with sources it cannot
 * show. Their bundled code maps to their published JavaScript instead, which the map carries.
 */
const publishedSources = {
  name: 'published-sources',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/].*\.[cm]?js$/ }, (args) => ({
      contents: readFileSync(args.path, 'utf8').replace(/^\/\/# sourceMappingURL=.*$/gm, ''),
      loader: 'js',
      resolveDir: dirname(args.path),
    }));
  },
};

/** What the two builds share. */
const common = {
  ...NODE_BUNDLE,
  absWorkingDir: here,
  metafile: true,
  define: { MDP_SERVER_VERSION: JSON.stringify(version) },
};

/**
 * What the binary imports only when a command needs it: each an entry of the second build, in
 * `dist/bundle/<name>.js`. `@mdp/mcp-bridge` is one too, so that the stdio session (cli.ts →
 * mcp-command.ts) and `/mcp` (server.ts) load the one same copy.
 */
const LATER = {
  server: { from: 'src/cli.ts', specifier: './server.js', entry: 'src/server.ts' },
  cluster: { from: 'src/cli.ts', specifier: './cluster.js', entry: 'src/cluster.ts' },
  setup: { from: 'src/cli.ts', specifier: './setup/index.js', entry: 'src/setup/index.ts' },
  'cookie-key-command': { from: 'src/cli.ts', specifier: './cookie-key-command.js', entry: 'src/cookie-key-command.ts' },
  'mcp-bridge': { from: 'src/mcp-command.ts', specifier: '@mdp/mcp-bridge', entry: '@mdp/mcp-bridge' },
};

/** In the first build, the imports of {@link LATER} become imports of the second build's files. */
const later = {
  name: 'later',
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      const name = Object.keys(LATER).find((key) => LATER[key].specifier === args.path && args.importer === join(here, LATER[key].from));
      return name === undefined ? undefined : { path: `./bundle/${name}.js`, external: true };
    });
  },
};

rmSync(chunks, { recursive: true, force: true });
// Two builds, not one with code splitting: esbuild puts in the chunks a file needs every module a
// package's index re-exports if any other entry uses it, and the command line's settings import
// the packages' indexes (for their defaults), which would load the whole server at start.
const start = await build({ ...common, entryPoints: { cli: 'src/cli.ts' }, outdir: dist, plugins: [later, publishedSources] });
const rest = await build({
  ...common,
  entryPoints: Object.fromEntries(Object.entries(LATER).map(([name, { entry }]) => [name, entry])),
  outdir: chunks,
  splitting: true,
  chunkNames: 'chunk-[hash]',
  plugins: [inspectorAssets, publishedSources],
});

for (const output of [...Object.keys(start.metafile.outputs), ...Object.keys(rest.metafile.outputs)]) {
  if (output.endsWith('.js')) asciiComments(join(here, output));
}
// Each import the first build left for the second must name one of its files.
for (const output of Object.values(start.metafile.outputs)) {
  for (const { path, external } of output.imports) {
    if (external && path.startsWith('./bundle/') && !rest.metafile.outputs[`dist/${path.slice(2)}`])
      throw new Error(`bundle.mjs: dist/cli.js imports ${path}, which the second build did not make`);
  }
}
// The inspector's chunk must sit in dist/bundle/, where its files were copied.
const inspectorChunk = Object.entries(rest.metafile.outputs).find(([, output]) =>
  Object.keys(output.inputs).some((input) => /inspector[\\/]dist[\\/]assets\.js$/.test(input)),
);
if (!inspectorChunk || relative(chunks, join(here, inspectorChunk[0])).startsWith('..')) {
  throw new Error(`bundle.mjs: the inspector's assets are in ${inspectorChunk?.[0] ?? 'no output'}, not in dist/bundle/`);
}
if (process.env.MDP_BUNDLE_META) {
  writeFileSync(
    process.env.MDP_BUNDLE_META,
    JSON.stringify({ inputs: { ...start.metafile.inputs, ...rest.metafile.inputs }, outputs: { ...start.metafile.outputs, ...rest.metafile.outputs } }),
  );
}
