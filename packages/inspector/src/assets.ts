/**
 * The inspector's files: the page and its stylesheet (here, as text), the page's modules (built by
 * `tsc -p tsconfig.page.json` into `dist/page/`) and marked's browser build, read once per process.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

export interface InspectorAsset {
  readonly contentType: string;
  readonly body: Buffer;
}

/** Where the inspector is served. */
export const INSPECTOR_PATH = '/mdp/inspector';

/**
 * The page's Content-Security-Policy: its own scripts only, requests to this origin only, no
 * plugins, no framing of the page. Inline styles are allowed for the Markdown frame's stylesheet
 * (the frame is sandboxed and inherits this policy).
 */
export const INSPECTOR_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "frame-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>MDP inspector</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${INSPECTOR_PATH}/inspector.css">
<script type="module" src="${INSPECTOR_PATH}/inspector.js"></script>
</head>
<body>
<header>
  <h1>MDP inspector</h1>
  <span id="server"></span>
  <span id="live" data-state="down">connecting…</span>
  <button id="token-button" type="button">Token</button>
</header>
<form id="token-form" hidden>
  <label>Token <input id="token" type="password" autocomplete="off" spellcheck="false"></label>
  <button type="submit">Use for this tab</button>
  <span id="token-error"></span>
</form>
<main>
  <section id="clients-panel">
    <h2>Clients <span id="client-count"></span></h2>
    <p id="no-clients">No client is connected.</p>
    <ul id="clients"></ul>
    <button id="more-clients" type="button" hidden>Show more clients</button>
  </section>
  <section id="call-panel">
    <h2>Call a path</h2>
    <form id="call-form">
      <label>Client <input id="call-client" required spellcheck="false"></label>
      <label>Method <select id="call-method"><option>GET</option><option>POST</option><option>PUT</option><option>PATCH</option><option>DELETE</option></select></label>
      <label>Path <input id="call-path" required spellcheck="false" placeholder="/docs/skill.md"></label>
      <p id="call-hint"></p>
      <label>Query <input id="call-query" spellcheck="false" placeholder="name=value&amp;other=value"></label>
      <label>Body (JSON) <textarea id="call-body" rows="6" spellcheck="false" placeholder="{&quot;key&quot;: &quot;value&quot;}"></textarea></label>
      <button id="call-button" type="submit">Call</button>
    </form>
    <div id="result" hidden>
      <p>Status <strong id="result-status"></strong> <span id="result-time"></span></p>
      <pre id="result-json"></pre>
      <iframe id="result-markdown" sandbox="" title="Rendered Markdown" hidden></iframe>
    </div>
  </section>
  <section id="cluster-panel">
    <h2>Cluster</h2>
    <dl id="cluster"></dl>
    <button id="cluster-refresh" type="button">Refresh</button>
  </section>
</main>
</body>
</html>
`;

const INSPECTOR_CSS = `*{box-sizing:border-box}
[hidden]{display:none !important}
body{margin:0;font:14px/1.45 system-ui,sans-serif;color:#1d2330;background:#f6f7f9}
header{display:flex;gap:12px;align-items:center;padding:10px 16px;background:#1d2330;color:#fff}
header h1{font-size:18px;margin:0}
#server{opacity:.8;font-family:ui-monospace,monospace}
#live{margin-left:auto;padding:2px 8px;border-radius:10px;background:#7a2e2e}
#live[data-state=live]{background:#2e7a46}
#live[data-state=auth]{background:#8a6d1a}
#token-form{padding:10px 16px;background:#fff3cd;display:flex;gap:8px;align-items:center}
#token-error{color:#7a2e2e}
main{display:grid;grid-template-columns:minmax(260px,1fr) minmax(320px,1.4fr) minmax(220px,.8fr);gap:12px;padding:12px}
section{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:10px 12px;min-width:0}
h2{font-size:15px;margin:0 0 8px}
ul{list-style:none;margin:0;padding:0}
.client{border-top:1px solid #eceef2;padding:8px 0}
.client-meta{color:#5b6475;font-size:12px}
.paths li{margin:2px 0}
.path{display:flex;gap:6px;align-items:center;width:100%;text-align:left;border:1px solid transparent;background:none;padding:3px 4px;border-radius:4px;cursor:pointer;font:inherit}
.path:hover{background:#eef2fb}
.path.selected{border-color:#3a64c8;background:#e4ebfb}
.method{font-size:11px;font-weight:600;text-transform:uppercase;padding:0 4px;border-radius:3px;background:#dde1e8}
.method.skill{background:#d7ecdc}
.method.prompt{background:#f1e3c8}
.description{color:#5b6475;font-size:12px;margin-left:10px}
label{display:block;margin:6px 0}
input,select,textarea{display:block;width:100%;font:13px ui-monospace,monospace;padding:4px 6px;border:1px solid #c5cad4;border-radius:4px}
#call-hint{color:#5b6475;font-size:12px;margin:0}
button{font:inherit;padding:4px 10px}
#result pre{background:#f3f4f7;padding:8px;overflow:auto;max-height:420px;white-space:pre-wrap;word-break:break-word}
#result iframe{width:100%;height:320px;border:1px solid #dde1e8;border-radius:4px;background:#fff}
dl{display:grid;grid-template-columns:auto 1fr;gap:4px 10px;margin:0 0 8px}
dt{color:#5b6475}
dd{margin:0;overflow-wrap:anywhere}
@media (max-width:900px){main{grid-template-columns:1fr}}
`;

const JS = 'text/javascript; charset=utf-8';

let loaded: ReadonlyMap<string, InspectorAsset> | undefined;

/** The files by path below {@link INSPECTOR_PATH} (`''` is the page). Read on first use. */
export function inspectorAssets(): ReadonlyMap<string, InspectorAsset> {
  if (loaded) return loaded;
  const assets = new Map<string, InspectorAsset>([
    ['', { contentType: 'text/html; charset=utf-8', body: Buffer.from(INDEX_HTML) }],
    ['/inspector.css', { contentType: 'text/css; charset=utf-8', body: Buffer.from(INSPECTOR_CSS) }],
  ]);
  // The package's dist/page/, from dist/ (built) and from src/ (tests) alike.
  const pageDir = fileURLToPath(new URL('../dist/page/', import.meta.url));
  for (const file of readdirSync(pageDir)) {
    if (file.endsWith('.js')) assets.set(`/${file}`, { contentType: JS, body: readFileSync(`${pageDir}${file}`) });
  }
  // marked's ES module build, as its package exports it.
  assets.set('/marked.js', { contentType: JS, body: readFileSync(createRequire(import.meta.url).resolve('marked')) });
  loaded = assets;
  return assets;
}
