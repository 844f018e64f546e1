/**
 * Every "SPEC §n" and "STYLE §n" the repository cites resolves in a clone: "SPEC §n" (or §n.m) to a
 * heading numbered n (n.m) in a file of docs/spec/, "STYLE §n" to a heading numbered n in
 * docs/spec/style.md (docs/spec/README.md says so). A citation of anything else fails, naming the
 * file and line.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const SPEC_DIR = join(REPO, 'docs/spec');
const STYLE_FILE = 'style.md';
const THIS_FILE = fileURLToPath(import.meta.url);

/** Where citations are looked for: sources, tests, docs and changesets. */
const ROOTS = ['packages', 'apps', 'bench', 'release', 'docs', '.changeset', 'README.md'];
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'coverage', '.turbo', '.git']);
const SCANNED = /\.(?:[cm]?[jt]sx?|md)$/;

type Book = 'SPEC' | 'STYLE';

interface Citation {
  readonly book: Book;
  /** `4`, or `4.2` for a subsection. */
  readonly section: string;
  /** 1-based. */
  readonly line: number;
  /** The citation as written, e.g. `SPEC §9–§10`. */
  readonly text: string;
}

const NUMBER = String.raw`§\s?(\d+(?:\.\d+)*)`;
// `SPEC §4`, `SPEC §9–§10` (a range), `SPEC §10, §12` and `§4 and §7` (lists), `STYLE §5–§6`.
const CITATION = new RegExp(String.raw`\b(SPEC|STYLE)\s+${NUMBER}((?:\s*(?:[–-]|,|and|or)\s*${NUMBER})*)`, 'g');
const MORE = new RegExp(String.raw`([–-]|,|and|or)\s*${NUMBER}`, 'g');

/** The citations in `text`, a range standing for every whole section from its start to its end. */
function citationsIn(text: string): Citation[] {
  const found: Citation[] = [];
  text.split('\n').forEach((content, index) => {
    for (const match of content.matchAll(CITATION)) {
      const book = match[1] as Book;
      const cite = (section: string): void => void found.push({ book, section, line: index + 1, text: match[0] });
      let previous = match[2] as string;
      cite(previous);
      for (const more of (match[3] ?? '').matchAll(MORE)) {
        const section = more[2] as string;
        const [from, to] = [Number(previous), Number(section)];
        // A range of whole sections (`§12–§14`) cites those between too.
        if (/[–-]/.test(more[1] as string) && Number.isInteger(from) && Number.isInteger(to)) {
          for (let n = from + 1; n < to; n++) cite(String(n));
        }
        cite(section);
        previous = section;
      }
    }
  });
  return found;
}

/** The section numbers of a document: headings that start with a number (`# 4. …`, `## 4.2 …`). */
function headingNumbers(markdown: string): string[] {
  return [...markdown.matchAll(/^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s/gm)].map((match) => match[1] as string);
}

function specFiles(): string[] {
  return readdirSync(SPEC_DIR).filter((name) => name.endsWith('.md'));
}

function sectionsOf(book: Book): Set<string> {
  const files = specFiles().filter((name) => (book === 'STYLE') === (name === STYLE_FILE));
  return new Set(files.flatMap((name) => headingNumbers(readFileSync(join(SPEC_DIR, name), 'utf8'))));
}

function filesUnder(path: string): string[] {
  let entries;
  try {
    entries = readdirSync(path, { withFileTypes: true });
  } catch {
    return SCANNED.test(path) ? [path] : [];
  }
  return entries.flatMap((entry) => {
    if (entry.isDirectory()) return SKIPPED_DIRS.has(entry.name) ? [] : filesUnder(join(path, entry.name));
    return SCANNED.test(entry.name) ? [join(path, entry.name)] : [];
  });
}

function repositoryCitations(): Array<Citation & { readonly file: string }> {
  const files = ROOTS.flatMap((root) => filesUnder(join(REPO, root))).filter((file) => file !== THIS_FILE);
  return files.flatMap((file) => citationsIn(readFileSync(file, 'utf8')).map((citation) => ({ ...citation, file: relative(REPO, file) })));
}

describe('the citation reader', () => {
  it('reads single citations, subsections, ranges and lists', () => {
    const text = 'a (SPEC §4) b\nSPEC §9–§10, STYLE §5-§6\n(SPEC §10, §12) SPEC §4.2 and §7\nRFC 9112 §3.2.2';
    const read = citationsIn(text).map(({ book, section, line }) => `${line}:${book} ${section}`);
    expect(read).toEqual(['1:SPEC 4', '2:SPEC 9', '2:SPEC 10', '2:STYLE 5', '2:STYLE 6', '3:SPEC 10', '3:SPEC 12', '3:SPEC 4.2', '3:SPEC 7']);
  });

  it('takes every section of a range of whole sections', () => {
    expect(citationsIn('SPEC §12–§14').map((c) => c.section)).toEqual(['12', '13', '14']);
  });

  it('reads numbered headings only', () => {
    expect(headingNumbers('# 4. Registry\n## 4.2 Who\n## Not numbered\n#4 no space\n')).toEqual(['4', '4.2']);
  });
});

describe('docs/spec', () => {
  it('has sections 1 to 17, each in one file named by its number, and STYLE points 1 to 10', () => {
    const numbered = specFiles().filter((name) => /^\d\d-/.test(name));
    expect(numbered.map((name) => Number(name.slice(0, 2)))).toEqual(Array.from({ length: 17 }, (_, i) => i + 1));
    for (const name of numbered) {
      const [top] = headingNumbers(readFileSync(join(SPEC_DIR, name), 'utf8'));
      expect(top, `${name} starts with the heading of its own section`).toBe(String(Number(name.slice(0, 2))));
    }
    const style = headingNumbers(readFileSync(join(SPEC_DIR, STYLE_FILE), 'utf8'));
    expect(style).toEqual(Array.from({ length: 10 }, (_, i) => String(i + 1)));
  });

  it('numbers no section twice', () => {
    for (const book of ['SPEC', 'STYLE'] as const) {
      const files = specFiles().filter((name) => (book === 'STYLE') === (name === STYLE_FILE));
      const all = files.flatMap((name) => headingNumbers(readFileSync(join(SPEC_DIR, name), 'utf8')));
      expect(
        all.filter((n, i) => all.indexOf(n) !== i),
        `${book} sections numbered twice`,
      ).toEqual([]);
    }
  });
});

describe('citations in the repository', () => {
  const citations = repositoryCitations();

  it('are found (the reader works on the tree)', () => {
    // About 190 at the time of writing; far fewer means the scan missed the sources.
    expect(citations.length).toBeGreaterThan(100);
  });

  it('each name a section that exists', () => {
    const sections = { SPEC: sectionsOf('SPEC'), STYLE: sectionsOf('STYLE') };
    const missing = citations
      .filter((citation) => !sections[citation.book].has(citation.section))
      .map(({ file, line, book, section, text }) => `${file}:${line} cites ${book} §${section} ("${text}"), which docs/spec does not have`);
    expect(missing, 'citations of sections that docs/spec does not have').toEqual([]);
  });
});
