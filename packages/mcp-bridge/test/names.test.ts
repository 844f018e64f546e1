import { describe, expect, it } from 'vitest';
import { NAME_MAX_CHARS, assignNames, bookKey, clientAlias, emptyNameBook, fitName, hash6, pathName, snake, trimNameBook } from '../src/names.js';

const req = (key: string, preferred: string) => ({ key, preferred: () => preferred });

describe('pathName', () => {
  it.each([
    ['/page/click', 'page_click'],
    ['/users/:id/profile', 'users_profile'],
    ['/getUser', 'get_user'],
    ['/a.b~c/d-e', 'a_b_c_d_e'],
    ['/docs/review/skill.md', 'docs_review'],
    ['/docs/review/SKILL.md', 'docs_review'],
    ['/code-review.prompt.md', 'code_review'],
    ['/:id', ''],
    ['/', ''],
  ])('%s → %s', (path, name) => expect(pathName(path)).toBe(name));

  it('keeps only [a-z0-9_]', () => {
    expect(snake('Ünïcode__Name!!')).toBe('n_code_name');
  });
});

describe('clientAlias', () => {
  it('is short snake case, and a hash when nothing usable is left', () => {
    expect(clientAlias('todo-app')).toBe('todo_app');
    expect(clientAlias('a-very-long-client-identifier')).toHaveLength(16);
    expect(clientAlias('—')).toMatch(/^c[0-9a-f]{5}$/);
  });
});

describe('fitName', () => {
  it('leaves short names and cuts long ones to 48 with _ and a 6-character hash of the key', () => {
    expect(fitName('page_click', 'k')).toBe('page_click');
    const long = fitName('x'.repeat(60), 'key');
    expect(long).toHaveLength(NAME_MAX_CHARS);
    expect(long).toBe(`${'x'.repeat(41)}_${hash6('key')}`);
    expect(long).toMatch(/^[a-z0-9_]+$/);
  });
});

describe('assignNames', () => {
  it('gives the preferred name, and the same name to the same key for ever', () => {
    const first = assignNames(emptyNameBook, 'tool', [req('POST /page/click', 'page_click')]);
    expect(first.names.get('POST /page/click')).toBe('page_click');
    // Later the rule would choose differently (another method appeared): the name stays.
    const again = assignNames(first.book, 'tool', [req('POST /page/click', 'post_page_click')]);
    expect(again.names.get('POST /page/click')).toBe('page_click');
    expect(again.book).toBe(first.book);
  });

  it('never hands a name to a second key: the second gets the hash suffix', () => {
    const a = assignNames(emptyNameBook, 'tool', [req('POST /page/click', 'page_click'), req('POST /page-click', 'page_click')]);
    expect(a.names.get('POST /page-click')).toBe(`page_click_${hash6('POST /page-click')}`);
  });

  it('never produces a generic tool name in any spelling', () => {
    const a = assignNames(emptyNameBook, 'tool', [req('GET /listclients', 'listclients'), req('GET /list-paths', 'list_paths')]);
    expect(a.names.get('GET /listclients')).toBe(`listclients_${hash6('GET /listclients')}`);
    expect(a.names.get('GET /list-paths')).toBe(`list_paths_${hash6('GET /list-paths')}`);
  });

  it('keeps namespaces apart: a prompt may share a tool name', () => {
    const tools = assignNames(emptyNameBook, 'tool', [req('GET /review', 'review')]);
    const prompts = assignNames(tools.book, 'prompt', [req('/review/prompt.md', 'review')]);
    expect(prompts.names.get('/review/prompt.md')).toBe('review');
  });

  it('trimNameBook forgets the oldest keys not in use, and only past the bound', () => {
    const { book } = assignNames(emptyNameBook, 'tool', [req('a', 'a'), req('b', 'b'), req('c', 'c')]);
    expect(trimNameBook(book, new Set(), 3)).toBe(book);
    const trimmed = trimNameBook(book, new Set([bookKey('tool', 'a')]), 2);
    expect([...trimmed.byKey.keys()]).toEqual(['tool a', 'tool c']);
    expect([...trimmed.byName.keys()]).toEqual(['tool a', 'tool c']);
    // The forgotten name is free again.
    expect(assignNames(trimmed, 'tool', [req('z', 'b')]).names.get('z')).toBe('b');
  });
});
