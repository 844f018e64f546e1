/**
 * A bundle's comments in ASCII. esbuild escapes what is not ASCII in strings and identifiers but
 * keeps comments as written, and a single character above U+00FF in a comment (an em dash, `≤`,
 * `…`) makes node decode the whole file into a two-byte string, which V8 then scans as such: about
 * a tenth more CPU to import the binary's chunks (bench README, issue 33). Each such character of
 * a comment line becomes one ASCII character (two for one outside the BMP), so every column, and
 * with them the source map's mappings, stays where it was; the map's sources keep the text as
 * written. A character above U+00FF anywhere but a comment line fails the build instead of being
 * changed: code would change meaning.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const NEAREST = { '—': '-', '–': '-', '−': '-', '…': '.', '→': '>', '←': '<', '≤': '<', '≥': '>', '×': 'x', '‘': "'", '’': "'", '“': '"', '”': '"' };
const WIDE = /[^\u0000-\u00ff]/gu;
const HAS_WIDE = /[^\u0000-\u00ff]/u;
const COMMENT_LINE = /^\s*(\/\/|\/\*|\*)/;

/** Rewrite `file` (a bundled `.js`) in place; throws when a wide character is not in a comment line. */
export function asciiComments(file) {
  const text = readFileSync(file, 'utf8');
  if (!HAS_WIDE.test(text)) return;
  const lines = text.split('\n').map((line, index) => {
    if (!HAS_WIDE.test(line)) return line;
    if (!COMMENT_LINE.test(line)) throw new Error(`${file}:${index + 1}: a character above U+00FF outside a comment line: ${line.trim().slice(0, 120)}`);
    return line.replace(WIDE, (char) => NEAREST[char] ?? '?'.repeat(char.length));
  });
  writeFileSync(file, lines.join('\n'));
}
