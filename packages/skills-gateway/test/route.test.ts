/** Parsing the request target of the two skill routes and the candidate target paths (SPEC §8). No router involved. */
import { describe, expect, it } from 'vitest';
import { isSkillRoutePath, lastValueQuery, originForm, parseSkillRoute, skillPathCandidates } from '../src/index.js';

describe('parseSkillRoute', () => {
  it.each([
    ['/skills/c1/docs/review', 'c1', '/docs/review'],
    ['/c1/skills/docs/review', 'c1', '/docs/review'],
    ['/skills/c1/review.skill.md', 'c1', '/review.skill.md'],
    ['/c1/skills/guides/setup/SKILL.md', 'c1', '/guides/setup/SKILL.md'],
    ['/skills/c1/a_b-c.d~e/F9', 'c1', '/a_b-c.d~e/F9'],
    // The direct form takes any client id, the reserved names included.
    ['/skills/mdp/x', 'mdp', '/x'],
    ['/skills/skills/x', 'skills', '/x'],
    // One trailing slash is tolerated, as the reference server does.
    ['/skills/c1/docs/', 'c1', '/docs'],
    ['/c1/skills/docs/review/', 'c1', '/docs/review'],
  ])('%s → client %s, path %s', (pathname, clientId, skillPath) => {
    expect(parseSkillRoute(pathname)).toEqual({ ok: true, clientId, skillPath });
  });

  it('decodes the client id and every path segment', () => {
    expect(parseSkillRoute('/skills/my%20client/docs')).toEqual({ ok: true, clientId: 'my client', skillPath: '/docs' });
    expect(parseSkillRoute('/caf%C3%A9/skills/docs')).toEqual({ ok: true, clientId: 'café', skillPath: '/docs' });
    expect(parseSkillRoute('/skills/c1/%64ocs/a%2Db')).toEqual({ ok: true, clientId: 'c1', skillPath: '/docs/a-b' });
  });

  it.each([
    '/',
    '/skills',
    '/skills/',
    '/skills/c1',
    '/skills//x',
    '/c1/skills',
    '//skills/x',
    '/c1/other/x',
    '/c1/Skills/x',
    '/mdp/skills/x',
    // `mdp` and `skills` are never the nested form, however they are spelled.
    '/%6Ddp/skills/x',
    '/%73kills/skills/x',
  ])('%s is not a skill route', (pathname) => {
    expect(parseSkillRoute(pathname)).toBeUndefined();
    expect(isSkillRoutePath(pathname)).toBe(false);
  });

  it.each([
    ['/skills/c1/%E0%A4%A', /malformed percent-encoding/],
    ['/skills/c1/%ZZ', /malformed percent-encoding/],
    ['/skills/c1/a/%', /malformed percent-encoding/],
    ['/skills/%ZZ/x', /^clientId has malformed percent-encoding$/],
    ['/%E0%A4%A/skills/x', /^clientId has malformed percent-encoding$/],
    ['/skills/c1/a%2Fb', /encoded "\/"/],
    ['/skills/c1/a%2fb', /encoded "\/"/],
    ['/skills/c1/a/../b', /"\." or "\.\." segments/],
    ['/skills/c1/./a', /"\." or "\.\." segments/],
    ['/skills/c1/a/%2E%2E/b', /"\." or "\.\." segments/],
    ['/c1/skills/%2e', /"\." or "\.\." segments/],
    ['/skills/c1/', /empty segment/],
    ['/c1/skills/', /empty segment/],
    ['/skills/c1/a//', /empty segment/],
    ['/c1/skills//', /empty segment/],
    ['/skills/c1/a//b', /empty segment/],
    ['/skills/c1/a%20b', /whitespace or control/],
    ['/skills/c1/%00', /whitespace or control/],
    ['/skills/c1/a%3Fb', /"\?"/],
    ['/skills/c1/caf%C3%A9', /may only use letters/],
    ['/skills/c1/a@b', /may only use letters/],
    // A parameter segment is a pattern, not a path: callers cannot address it.
    ['/skills/c1/%3Aname/skill.md', /may only use letters/],
  ])('%s → error %s', (pathname, error) => {
    const route = parseSkillRoute(pathname);
    expect(route?.ok).toBe(false);
    if (route && !route.ok) expect(route.error).toMatch(error);
  });
});

describe('originForm', () => {
  it('drops the scheme and authority of an absolute-form target and keeps the rest as sent', () => {
    expect(originForm('/skills/a/b?x=1')).toBe('/skills/a/b?x=1');
    expect(originForm('http://h:1/skills/a/../b?x')).toBe('/skills/a/../b?x');
    expect(originForm('HTTPS://h/%2e%2e')).toBe('/%2e%2e');
    expect(originForm('http://h')).toBe('/');
    expect(originForm('http://h?x=1')).toBe('/?x=1');
    expect(originForm('*')).toBe('*');
    expect(originForm('skills/a')).toBe('skills/a');
  });
});

describe('isSkillRoutePath', () => {
  it.each(['/skills/c1/x', '/c1/skills/x', '/skills/c1/', '/c1/skills/', '/skills/skills/x', '/skills/c1/a%2Fb', '/x%ZZ/skills/y'])(
    '%s has the shape of a skill route',
    (pathname) => expect(isSkillRoutePath(pathname)).toBe(true),
  );
});

describe('lastValueQuery', () => {
  it('keeps the last value of a repeated key', () => {
    expect(lastValueQuery(new URLSearchParams('x=1&y=a&x=2&x=3&empty='))).toEqual({ x: '3', y: 'a', empty: '' });
  });

  it('keeps keys named like Object built-ins', () => {
    expect(JSON.stringify(lastValueQuery(new URLSearchParams('__proto__=1&constructor=2&toString=3')))).toBe(
      '{"__proto__":"1","constructor":"2","toString":"3"}',
    );
  });
});

describe('skillPathCandidates', () => {
  it('tries the directory forms, then the .skill.md form, for a plain path', () => {
    expect(skillPathCandidates('/docs/review')).toEqual(['/docs/review/skill.md', '/docs/review/SKILL.md', '/docs/review.skill.md']);
  });

  it('tries the path itself first when it already is a skill path', () => {
    expect(skillPathCandidates('/docs/review/skill.md')).toEqual([
      '/docs/review/skill.md',
      '/docs/review/skill.md/skill.md',
      '/docs/review/skill.md/SKILL.md',
      '/docs/review/skill.md.skill.md',
    ]);
    expect(skillPathCandidates('/docs/SKILL.md')[0]).toBe('/docs/SKILL.md');
    expect(skillPathCandidates('/review.skill.md')).toEqual([
      '/review.skill.md',
      '/review.skill.md/skill.md',
      '/review.skill.md/SKILL.md',
      '/review.skill.md.skill.md',
    ]);
  });
});
