/** Target resolution: specificity, params, methods, scale (SPEC §4 resolution). */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { skillPathCandidates, staticPathProblem, type PathDescriptor } from '@mdp/protocol';
import { PathIndex, Router } from '../src/index.js';
import { connectClient, endpoint, manualClock, prompt, skill } from './helpers.js';

const DOCS: PathDescriptor[] = [skill('/docs/:name/skill.md'), endpoint('/docs/intro/:file'), skill('/docs/intro/skill.md'), endpoint('/docs/:name/:file')];

/** Every ordering of a small array, so declaration order cannot hide a specificity bug. */
function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

describe('PathIndex specificity', () => {
  it.each(permutations(DOCS).map((order) => [order.map((d) => d.path).join(' , '), order]))(
    'static > reserved leaf > parameter, declared as %s',
    (_name, order) => {
      const index = new PathIndex(order as PathDescriptor[]);
      // All four patterns match; the fully static one wins.
      expect(index.resolve('GET', '/docs/intro/skill.md')).toMatchObject({
        descriptor: { path: '/docs/intro/skill.md' },
        params: {},
        kind: 'skill',
      });
      // Segment 2: static `intro` beats `:name`.
      expect(index.resolve('GET', '/docs/intro/readme')).toMatchObject({
        descriptor: { path: '/docs/intro/:file' },
        params: { file: 'readme' },
        kind: 'tool',
      });
      // Segment 3: reserved leaf `skill.md` beats `:file`.
      expect(index.resolve('GET', '/docs/guide/skill.md')).toMatchObject({
        descriptor: { path: '/docs/:name/skill.md' },
        params: { name: 'guide' },
        kind: 'skill',
        method: 'GET',
        path: '/docs/guide/skill.md',
      });
      expect(index.resolve('GET', '/docs/guide/other')).toMatchObject({
        descriptor: { path: '/docs/:name/:file' },
        params: { name: 'guide', file: 'other' },
      });
    },
  );

  it('decides from the left: a static segment earlier beats a reserved leaf later', () => {
    const index = new PathIndex([endpoint('/docs/:name/readme'), endpoint('/docs/intro/:file')]);
    expect(index.resolve('GET', '/docs/intro/readme')).toMatchObject({
      descriptor: { path: '/docs/intro/:file' },
      params: { file: 'readme' },
      kind: 'tool',
    });
  });

  it("never binds a parameter to a value outside the clients' grammar (skill.md, dots, capitals)", () => {
    const index = new PathIndex([skill('/docs/:name/skill.md'), endpoint('/docs/intro/:file')]);
    expect(index.resolve('GET', '/docs/intro/skill.md')).toMatchObject({
      descriptor: { path: '/docs/:name/skill.md' },
      params: { name: 'intro' },
      kind: 'skill',
    });
    expect(index.resolve('GET', '/docs/Intro/skill.md')).toBeUndefined();
  });

  it('treats SKILL.md and prompt.md leaves as reserved, .skill.md leaves as static', () => {
    const index = new PathIndex([endpoint('/a/:x/:leaf'), skill('/a/:x/SKILL.md'), prompt('/a/:x/prompt.md'), skill('/a/:x/review.skill.md')]);
    expect(index.resolve('GET', '/a/1/SKILL.md')?.descriptor.path).toBe('/a/:x/SKILL.md');
    expect(index.resolve('GET', '/a/1/prompt.md')).toMatchObject({ descriptor: { path: '/a/:x/prompt.md' }, kind: 'prompt' });
    expect(index.resolve('GET', '/a/1/review.skill.md')?.descriptor.path).toBe('/a/:x/review.skill.md');
    expect(index.resolve('GET', '/a/1/other')?.descriptor.path).toBe('/a/:x/:leaf');
  });

  it('keeps declaration order between equally specific patterns and for duplicate static paths', () => {
    const index = new PathIndex([
      endpoint('/u/:a', 'GET', { description: 'first' }),
      endpoint('/u/:b', 'GET', { description: 'second' }),
      endpoint('/s', 'GET', { description: 'first static' }),
      endpoint('/s', 'GET', { description: 'second static' }),
    ]);
    expect(index.resolve('GET', '/u/1')).toMatchObject({ descriptor: { description: 'first' }, params: { a: '1' } });
    expect(index.resolve('GET', '/s')?.descriptor).toMatchObject({ description: 'first static' });
  });

  it('matches by method: an endpoint its own, prompt and skill only GET', () => {
    const index = new PathIndex([
      endpoint('/orders/:id', 'GET', { description: 'read' }),
      endpoint('/orders/:id', 'DELETE', { description: 'remove' }),
      endpoint('/orders', 'POST'),
      skill('/docs/skill.md'),
      prompt('/hello.prompt.md'),
    ]);
    expect(index.resolve('GET', '/orders/9')?.descriptor.description).toBe('read');
    expect(index.resolve('DELETE', '/orders/9')).toMatchObject({ descriptor: { description: 'remove' }, method: 'DELETE' });
    expect(index.resolve('PUT', '/orders/9')).toBeUndefined();
    expect(index.resolve('POST', '/orders')?.kind).toBe('tool');
    expect(index.resolve('GET', '/orders')).toBeUndefined();
    expect(index.resolve('POST', '/docs/skill.md')).toBeUndefined();
    expect(index.resolve('GET', '/hello.prompt.md')?.kind).toBe('prompt');
    expect(index.resolve('PATCH', '/hello.prompt.md')).toBeUndefined();
  });

  it('needs the same number of segments and is case-sensitive', () => {
    const index = new PathIndex([endpoint('/a/:b'), endpoint('/Static')]);
    expect(index.resolve('GET', '/a')).toBeUndefined();
    expect(index.resolve('GET', '/a/b/c')).toBeUndefined();
    expect(index.resolve('GET', '/static')).toBeUndefined();
    expect(index.resolve('GET', '/Static')).toBeDefined();
  });

  it('returns parameter values verbatim', () => {
    const index = new PathIndex([endpoint('/users/:user/files/:name')]);
    expect(index.resolve('GET', '/users/u-1/files/report_2')?.params).toEqual({ user: 'u-1', name: 'report_2' });
    expect(index.resolve('GET', '/users/a@b.com/files/x')).toBeUndefined();
  });

  it('findSkill returns only skill targets', () => {
    const index = new PathIndex([skill('/docs/:topic/skill.md'), endpoint('/docs/:topic/readme')]);
    expect(index.findSkill('/docs/review/skill.md')).toMatchObject({ kind: 'skill', params: { topic: 'review' } });
    expect(index.findSkill('/docs/review/readme')).toBeUndefined();
    expect(index.findSkill('/nothing/skill.md')).toBeUndefined();
  });
});

describe('PathIndex.resolveSkillRead', () => {
  /** The rule as SPEC §8 states it: the first candidate that resolves to a skill. */
  function reference(index: PathIndex, name: string) {
    if (staticPathProblem(name) !== undefined) return undefined;
    for (const candidate of skillPathCandidates(name)) {
      const target = index.findSkill(candidate);
      if (target) return target;
    }
    return undefined;
  }

  const CATALOGS: Record<string, PathDescriptor[]> = {
    'static skills of every form': [
      skill('/docs/review/skill.md'),
      skill('/docs/review/SKILL.md'),
      skill('/docs/review.skill.md'),
      skill('/guides/SKILL.md'),
      skill('/setup.skill.md'),
      skill('/a/b/c/skill.md'),
      skill('/odd/.skill.md'),
      skill('/skill.md'),
      // Names of dots: `/.` and `/..` are no segments, `/a/.b` is one.
      skill('/..skill.md'),
      skill('/...skill.md'),
      skill('/a/.b.skill.md'),
      skill('/a/..b.skill.md'),
    ],
    'a GET endpoint declared first shadows the skill form': [
      endpoint('/docs/review/skill.md'),
      skill('/docs/review/skill.md'),
      skill('/docs/review/SKILL.md'),
      prompt('/notes/prompt.md'),
    ],
    'with GET patterns': [skill('/docs/:topic/skill.md'), skill('/docs/intro/SKILL.md'), endpoint('/docs/:topic/readme'), skill('/odd/.skill.md')],
  };
  const NAMES = [
    '/docs/review',
    '/docs/review/skill.md',
    '/docs/review/SKILL.md',
    '/docs/review.skill.md',
    '/docs/intro',
    '/docs/other',
    '/docs/Other',
    '/guides',
    '/setup',
    '/a/b/c',
    '/a/b',
    '/odd/',
    '/odd',
    '/',
    '',
    '/.',
    '/..',
    '/a/.b',
    '/a/..b',
    '/docs//review',
    '/docs/../docs/review',
    '/notes',
    '/missing',
  ];

  it.each(Object.entries(CATALOGS))('answers as the candidate rule does: %s', (_name, catalog) => {
    const index = new PathIndex(catalog);
    for (const name of NAMES) {
      const expected = reference(index, name);
      const actual = index.resolveSkillRead(name);
      expect({ name, path: actual?.path, descriptor: actual?.descriptor, params: actual?.params, kind: actual?.kind }).toEqual({
        name,
        path: expected?.path,
        descriptor: expected?.descriptor,
        params: expected?.params,
        kind: expected?.kind,
      });
    }
  });

  it('prefers the name itself, then /skill.md, /SKILL.md, .skill.md', () => {
    const index = new PathIndex([skill('/r.skill.md'), skill('/r/SKILL.md'), skill('/r/skill.md')]);
    expect(index.resolveSkillRead('/r')?.path).toBe('/r/skill.md');
    expect(index.resolveSkillRead('/r.skill.md')?.path).toBe('/r.skill.md');
    expect(new PathIndex([skill('/r.skill.md'), skill('/r/SKILL.md')]).resolveSkillRead('/r')?.path).toBe('/r/SKILL.md');
    expect(new PathIndex([skill('/r.skill.md')]).resolveSkillRead('/r')?.path).toBe('/r.skill.md');
  });

  it('keeps nothing per read: reading a client does not make its index bigger (issue 37)', () => {
    // A server that reads across thousands of clients would otherwise build a table for each one
    // under load, and every such table ends up in the old generation.
    const index = new PathIndex([skill('/docs/review/skill.md'), skill('/setup.skill.md'), endpoint('/docs/review/readme')]);
    const before = Object.entries(index);
    expect(index.resolveSkillRead('/docs/review')?.path).toBe('/docs/review/skill.md');
    expect(index.resolveSkillRead('/setup')?.path).toBe('/setup.skill.md');
    expect(index.resolveSkillRead('/missing')).toBeUndefined();
    const after = Object.entries(index);
    expect(after.map(([key]) => key)).toEqual(before.map(([key]) => key));
    after.forEach(([key, value], i) => {
      expect(value, key).toBe(before[i]?.[1]);
    });
  });

  it('finds nothing under a name a skill route refuses', () => {
    // '/odd/.skill.md' is a valid pattern, but its name '/odd/' has an empty segment.
    expect(new PathIndex([skill('/odd/.skill.md')]).resolveSkillRead('/odd/')).toBeUndefined();
    expect(new PathIndex([skill('/odd/.skill.md'), skill('/p/:x/skill.md')]).resolveSkillRead('/odd/')).toBeUndefined();
  });
});

describe('Router.findTarget', () => {
  let router: Router;
  afterEach(async () => {
    await router.close();
  });

  it('resolves within the named client only and returns params', () => {
    router = new Router();
    connectClient(router, 'alpha', [endpoint('/items/:id')]);
    connectClient(router, 'beta', [endpoint('/other/:id')]);
    expect(router.findTarget('alpha', 'GET', '/items/5')).toMatchObject({ path: '/items/5', params: { id: '5' } });
    expect(router.findTarget('alpha', 'GET', '/other/5')).toBeUndefined();
    expect(router.findTarget('ghost', 'GET', '/items/5')).toBeUndefined();
  });

  it.each(['', 'items/5', '/items//5', '/items/./5', '/items/../5', '/items/5?x=1', '/items/5#f', '/items/a b', '/items/\u0007'])(
    'refuses the malformed concrete path %j',
    (path) => {
      router = new Router();
      connectClient(router, 'alpha', [endpoint('/items/:id'), endpoint('/:a/:b/:c')]);
      expect(router.findTarget('alpha', 'GET', path)).toBeUndefined();
    },
  );

  it('does not depend on how many clients are connected', async () => {
    try {
      router = new Router({ clock: manualClock() });
      const COUNT = 5000;
      const transports = [];
      for (let i = 0; i < COUNT; i++) {
        const id = `client-${i}`;
        transports.push(
          connectClient(router, id, [
            endpoint('/items/:id', 'GET', { description: id }),
            endpoint(`/only/${id}`, 'GET'),
            skill('/docs/:topic/skill.md', { description: id }),
          ]).transport,
        );
      }
      expect(router.clientCount).toBe(COUNT);

      // Only the named client's index is consulted, whatever the number of clients.
      const resolve = vi.spyOn(PathIndex.prototype, 'resolve');
      const target = router.findTarget('client-4321', 'GET', '/items/77');
      expect(resolve).toHaveBeenCalledTimes(1);
      resolve.mockRestore();

      expect(target).toMatchObject({ descriptor: { description: 'client-4321' }, params: { id: '77' } });
      expect(router.findTarget('client-0', 'GET', '/docs/intro/skill.md')).toMatchObject({
        descriptor: { description: 'client-0' },
        params: { topic: 'intro' },
      });
      expect(router.findTarget('client-4999', 'GET', '/only/client-4999')).toBeDefined();
      expect(router.findTarget('client-4999', 'GET', '/only/client-4998')).toBeUndefined();

      void router.invoke('client-4321', 'GET', '/items/77');
      expect(transports[4321]?.calls).toHaveLength(1);
      expect(transports.reduce((n, t) => n + t.calls.length, 0)).toBe(1);
    } finally {
      await router.close();
    }
  });
});
