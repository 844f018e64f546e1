import { describe, expect, it } from 'vitest';
import {
  SegmentRank,
  compareSpecificity,
  compilePattern,
  concretePathProblem,
  isPromptPath,
  isSkillPath,
  isValidConcretePath,
  isValidParamValue,
  isValidPattern,
  matchPattern,
  patternProblem,
  splitPath,
  staticPathProblem,
} from '../src/index.js';

describe('concrete paths', () => {
  it.each([
    '/a',
    '/orders/42',
    '/docs/review/skill.md',
    '/review.skill.md',
    '/a/.hidden',
    '/a/..b',
    '/...',
    '/a/b~c',
    // A concrete path is what a caller asks for; it is not limited to the descriptor alphabet.
    '/users/a@b.com',
    '/x/%20',
    '/a/:literal',
  ])('accepts %j', (path) => {
    expect(concretePathProblem(path)).toBeUndefined();
    expect(isValidConcretePath(path)).toBe(true);
  });

  it.each([
    ['', 'must start with "/"'],
    ['a/b', 'must start with "/"'],
    ['orders', 'must start with "/"'],
    [' /a', 'must start with "/"'],
    ['/a?b=1', '"?"'],
    ['/a#frag', '"#"'],
    ['/a b', 'whitespace'],
    ['/a\tb', 'whitespace'],
    ['/a\nb', 'whitespace'],
    ['/a\u00a0b', 'whitespace'],
    ['/a\u0000b', 'control'],
    ['/a\u0001b', 'control'],
    ['/a\u001fb', 'control'],
    ['/a\u007fb', 'control'],
    ['/a\u0085b', 'control'],
    ['/a\u009fb', 'control'],
    ['/', 'empty segment'],
    ['//a', 'empty segment'],
    ['/a//b', 'empty segment'],
    ['/a/', 'empty segment'],
    ['/.', '"." or ".."'],
    ['/..', '"." or ".."'],
    ['/a/./b', '"." or ".."'],
    ['/a/../b', '"." or ".."'],
    ['/a/.', '"." or ".."'],
    ['/a/..', '"." or ".."'],
  ])('refuses %j (%s)', (path, reason) => {
    const problem = concretePathProblem(path);
    expect(problem).toBeDefined();
    expect(problem).toContain(reason);
    expect(isValidConcretePath(path)).toBe(false);
  });
});

describe('patterns (descriptor paths)', () => {
  it.each([
    '/a',
    '/orders/:id',
    '/:section/:page',
    '/users/:user_id/posts/:postId2',
    '/:_x',
    '/Mixed-Case_name.v1~x',
    '/a/.well-known',
    '/docs/review/skill.md',
    '/docs/SKILL.md',
    '/review.skill.md',
    '/prompts/prompt.md',
    '/PROMPT.md',
    '/a/summarize.prompt.md',
    '/0/9',
  ])('accepts %j', (pattern) => {
    expect(patternProblem(pattern)).toBeUndefined();
    expect(isValidPattern(pattern)).toBe(true);
  });

  it.each([
    ['a', 'must start with "/"'],
    ['/a?x', '"?"'],
    ['/a#x', '"#"'],
    ['/a b', 'whitespace'],
    ['/a\u0007', 'control'],
    ['/a//b', 'empty segment'],
    ['/a/..', '"." or ".."'],
    ['/a@b', 'segment "a@b"'],
    ['/a%20b', 'segment "a%20b"'],
    ['/a+b', 'segment "a+b"'],
    ['/a*', 'segment "a*"'],
    ['/caf\u00e9', 'segment "caf\u00e9"'],
    ['/x/a:b', 'segment "a:b"'],
    ['/:1x', 'parameter segment ":1x"'],
    ['/:', 'parameter segment ":"'],
    ['/:a-b', 'parameter segment ":a-b"'],
    ['/:a.b', 'parameter segment ":a.b"'],
    ['/::a', 'parameter segment "::a"'],
  ])('refuses %j (%s)', (pattern, reason) => {
    const problem = patternProblem(pattern);
    expect(problem).toBeDefined();
    expect(problem).toContain(reason);
    expect(isValidPattern(pattern)).toBe(false);
  });
});

describe('skill and prompt paths', () => {
  it.each([
    ['/docs/review/skill.md', true],
    ['/docs/SKILL.md', true],
    ['/skill.md', true],
    ['/review.skill.md', true],
    ['/a/b/code-review.skill.md', true],
    ['/docs/Skill.md', false],
    ['/docs/skill.MD', false],
    ['/docs/myskill.md', false],
    ['/docs/skill.md.bak', false],
    ['/skill.md/readme', false],
    ['/docs/prompt.md', false],
    ['/docs/skills', false],
  ])('isSkillPath(%j) is %s', (path, expected) => {
    expect(isSkillPath(path)).toBe(expected);
  });

  it.each([
    ['/prompts/prompt.md', true],
    ['/PROMPT.md', true],
    ['/summarize.prompt.md', true],
    ['/a/b/x.prompt.md', true],
    ['/Prompt.md', false],
    ['/myprompt.md', false],
    ['/prompt.md/x', false],
    ['/docs/skill.md', false],
    ['/review.skill.md', false],
  ])('isPromptPath(%j) is %s', (path, expected) => {
    expect(isPromptPath(path)).toBe(expected);
  });
});

describe('compilePattern and splitPath', () => {
  it('records segments, ranks and whether the pattern is static', () => {
    expect(compilePattern('/docs/:topic/skill.md')).toEqual({
      pattern: '/docs/:topic/skill.md',
      segments: ['docs', 'topic', 'skill.md'],
      ranks: [SegmentRank.Static, SegmentRank.Param, SegmentRank.ReservedLeaf],
      isStatic: false,
    });
    expect(compilePattern('/docs/review.skill.md')).toEqual({
      pattern: '/docs/review.skill.md',
      segments: ['docs', 'review.skill.md'],
      ranks: [SegmentRank.Static, SegmentRank.Static],
      isStatic: true,
    });
  });

  it('ranks every reserved leaf name below a static segment and above a parameter', () => {
    for (const leaf of ['skill.md', 'SKILL.md', 'prompt.md', 'PROMPT.md']) {
      expect(compilePattern(`/a/${leaf}`).ranks).toEqual([SegmentRank.Static, SegmentRank.ReservedLeaf]);
    }
    expect(SegmentRank.Static).toBeGreaterThan(SegmentRank.ReservedLeaf);
    expect(SegmentRank.ReservedLeaf).toBeGreaterThan(SegmentRank.Param);
  });

  it('splits a concrete path into its segments', () => {
    expect(splitPath('/a')).toEqual(['a']);
    expect(splitPath('/orders/42/items')).toEqual(['orders', '42', 'items']);
  });
});

describe('matchPattern', () => {
  const match = (pattern: string, path: string) => matchPattern(compilePattern(pattern), splitPath(path));

  it('matches a static pattern exactly, with no parameters', () => {
    expect(match('/orders/list', '/orders/list')).toEqual({});
    expect(match('/docs/review/skill.md', '/docs/review/skill.md')).toEqual({});
  });

  it('extracts the values of :params', () => {
    expect(match('/orders/:id', '/orders/42')).toEqual({ id: '42' });
    expect(match('/users/:userId/posts/:postId', '/users/u1/posts/p9')).toEqual({ userId: 'u1', postId: 'p9' });
    expect(match('/:section/skill.md', '/docs/skill.md')).toEqual({ section: 'docs' });
  });

  it('passes parameter values through verbatim', () => {
    expect(match('/users/:id', '/users/user-42_b')).toEqual({ id: 'user-42_b' });
    expect(match('/files/:name', '/files/0report')).toEqual({ name: '0report' });
  });

  it("matches parameters only with values in the field clients' segment grammar", () => {
    // Field SDKs drop the connection (or crash) on a callClient path outside [a-z0-9][a-z0-9_-]*.
    for (const value of ['a@b.com', 'Guide', 'v1.2', 'a~b', 'report.skill.md', '-lead', '_x', 'café']) {
      expect(match('/docs/:topic', `/docs/${value}`), value).toBeUndefined();
      expect(isValidParamValue(value), value).toBe(false);
    }
    expect(isValidParamValue('guide-2')).toBe(true);
  });

  it('does not match a different static segment', () => {
    expect(match('/orders/:id', '/invoices/42')).toBeUndefined();
    expect(match('/docs/skill.md', '/docs/prompt.md')).toBeUndefined();
  });

  it('is case-sensitive', () => {
    expect(match('/Orders/:id', '/orders/42')).toBeUndefined();
    expect(match('/docs/skill.md', '/docs/SKILL.md')).toBeUndefined();
  });

  it('requires the same number of segments', () => {
    expect(match('/orders/:id', '/orders')).toBeUndefined();
    expect(match('/orders/:id', '/orders/42/items')).toBeUndefined();
    expect(match('/:a', '/x/y')).toBeUndefined();
  });
});

describe('compareSpecificity', () => {
  const cmp = (a: string, b: string) => compareSpecificity(compilePattern(a), compilePattern(b));

  it('puts a static segment before a parameter', () => {
    expect(cmp('/orders/list', '/orders/:id')).toBeLessThan(0);
    expect(cmp('/orders/:id', '/orders/list')).toBeGreaterThan(0);
  });

  it('puts a reserved leaf before a parameter', () => {
    expect(cmp('/docs/skill.md', '/docs/:file')).toBeLessThan(0);
    expect(cmp('/docs/:file', '/docs/SKILL.md')).toBeGreaterThan(0);
    expect(cmp('/docs/prompt.md', '/docs/:file')).toBeLessThan(0);
  });

  it('puts a static segment before a reserved leaf', () => {
    expect(cmp('/docs/readme', '/docs/skill.md')).toBeLessThan(0);
    expect(cmp('/docs/review.skill.md', '/docs/skill.md')).toBeLessThan(0);
    expect(cmp('/docs/PROMPT.md', '/docs/guide')).toBeGreaterThan(0);
  });

  it('lets the leftmost differing segment decide', () => {
    // Static first segment wins even though the other pattern is static later on.
    expect(cmp('/docs/:topic/:file', '/:section/review/skill.md')).toBeLessThan(0);
    expect(cmp('/:section/review/skill.md', '/docs/:topic/:file')).toBeGreaterThan(0);
    // Equal first segments: the second decides.
    expect(cmp('/docs/review/:file', '/docs/:topic/skill.md')).toBeLessThan(0);
    // Equal first two: the third decides.
    expect(cmp('/docs/:topic/skill.md', '/docs/:topic/:file')).toBeLessThan(0);
  });

  it('returns 0 for patterns of equal shape', () => {
    expect(cmp('/orders/:id', '/orders/:id')).toBe(0);
    expect(cmp('/orders/:id', '/invoices/:number')).toBe(0);
  });

  it('orders a longer pattern first when one is a prefix-shape of the other', () => {
    expect(cmp('/a/b', '/a')).toBeLessThan(0);
    expect(cmp('/a', '/a/b')).toBeGreaterThan(0);
  });

  it('sorts an array from most to least specific', () => {
    const patterns = [
      '/:section/:topic/:file',
      '/docs/:topic/:file',
      '/:section/review/skill.md',
      '/docs/review/:file',
      '/docs/:topic/skill.md',
      '/docs/review/skill.md',
      '/docs/review/guide',
    ];
    const sorted = patterns
      .map(compilePattern)
      .sort(compareSpecificity)
      .map((p) => p.pattern);
    expect(sorted).toEqual([
      '/docs/review/guide',
      '/docs/review/skill.md',
      '/docs/review/:file',
      '/docs/:topic/skill.md',
      '/docs/:topic/:file',
      '/:section/review/skill.md',
      '/:section/:topic/:file',
    ]);
  });

  it('picks the most specific pattern that matches a concrete path', () => {
    const compiled = ['/:section/:topic/:file', '/docs/:topic/:file', '/docs/:topic/skill.md', '/:section/review/skill.md']
      .map(compilePattern)
      .sort(compareSpecificity);
    const pick = (path: string) => {
      const segments = splitPath(path);
      for (const pattern of compiled) {
        const params = matchPattern(pattern, segments);
        if (params) return { pattern: pattern.pattern, params };
      }
      return undefined;
    };
    expect(pick('/docs/review/skill.md')).toEqual({ pattern: '/docs/:topic/skill.md', params: { topic: 'review' } });
    expect(pick('/docs/review/notes')).toEqual({ pattern: '/docs/:topic/:file', params: { topic: 'review', file: 'notes' } });
    expect(pick('/blog/review/skill.md')).toEqual({ pattern: '/:section/review/skill.md', params: { section: 'blog' } });
    expect(pick('/blog/x/y')).toEqual({
      pattern: '/:section/:topic/:file',
      params: { section: 'blog', topic: 'x', file: 'y' },
    });
    expect(pick('/too/short')).toBeUndefined();
  });
});

describe('staticPathProblem', () => {
  it('accepts paths whose segments are all static', () => {
    expect(staticPathProblem('/docs/review/skill.md')).toBeUndefined();
    expect(staticPathProblem('/a~b/.hidden/x_y-z')).toBeUndefined();
  });
  it('refuses segments outside the static grammar, with the reason', () => {
    expect(staticPathProblem('/docs/café')).toMatch(/segment "café"/);
    expect(staticPathProblem('/docs/:name')).toMatch(/segment ":name"/);
    expect(staticPathProblem('/a@b')).toMatch(/segment/);
    expect(staticPathProblem('/a/../b')).toMatch(/"\." or "\.\."/);
    expect(staticPathProblem('no-slash')).toMatch(/start with/);
  });
});
