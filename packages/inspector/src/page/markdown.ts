/**
 * Skills are Markdown from a client, so untrusted: rendered with marked into a sandboxed iframe
 * (no `allow-scripts`, no `allow-same-origin`). Whatever HTML the Markdown holds runs no script,
 * cannot reach this page, its token or its storage, and cannot navigate it.
 */
import { marked } from './marked.js';

const FRAME_STYLE =
  'body{font:14px/1.5 system-ui,sans-serif;margin:8px;color:#1d2330}pre,code{background:#f3f4f7;border-radius:3px}pre{padding:6px;overflow:auto}';

export function renderMarkdown(frame: HTMLIFrameElement, text: string): void {
  const html = marked.parse(text, { async: false });
  frame.setAttribute('sandbox', '');
  frame.setAttribute('referrerpolicy', 'no-referrer');
  frame.srcdoc = `<!doctype html><html><head><meta charset="utf-8"><style>${FRAME_STYLE}</style></head><body>${html}</body></html>`;
}
