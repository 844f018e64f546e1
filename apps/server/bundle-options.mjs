/**
 * What every bundle of ours is, apart from its entries, plugins and output: the binary's two builds
 * (bundle.mjs) and the bench's bundled SDK floor (bench/bundle-sdk.mjs), which must be bundled
 * exactly as the binary is to be its floor.
 */
export const NODE_BUNDLE = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Dependencies that ship both: their ES module build (jsonc-parser's UMD one hides its requires).
  mainFields: ['module', 'main'],
  sourcemap: true,
  logLevel: 'warning',
  // CommonJS dependencies (ws, prom-client, ajv…) call `require` for node's modules.
  banner: { js: "import { createRequire as __mdpCreateRequire } from 'node:module';\nconst require = __mdpCreateRequire(import.meta.url);" },
};
