import { describe, expect, it } from 'vitest';
import { FleetNames, MAX_PLAIN_ID_BYTES, MAX_REMEMBERED_TOKENS, base32, idToken, prefixFor, prefixProblem } from '../src/subjects.js';

const HOSTILE = [
  'a',
  'A',
  'a.b',
  'a..b',
  '.',
  '..',
  '*',
  '>',
  'a.*',
  'a.>',
  '*.>',
  'with space',
  ' ',
  '\t',
  '\n',
  '\0',
  'Case',
  'case',
  'CASE',
  'ǅ',
  'ǆ',
  'Ǆ',
  '日本語',
  '🙂',
  '\uD800',
  '\uDC00',
  '\uFFFD',
  'x'.repeat(MAX_PLAIN_ID_BYTES),
  'x'.repeat(MAX_PLAIN_ID_BYTES + 1),
  `${'x'.repeat(MAX_PLAIN_ID_BYTES)}y`,
  '$JS.API.>',
  '_INBOX.>',
];

describe('subject tokens of untrusted ids', () => {
  it('are one token of a–z, 2–7 (or 0/1 and a hash), never a wildcard, whatever the id holds', () => {
    for (const id of HOSTILE) expect(idToken(id)).toMatch(/^(?:[a-z2-7]+|[01][a-z2-7]{52})$/);
  });

  it('are different for different ids: case, lone surrogates against U+FFFD, long ids', () => {
    const tokens = HOSTILE.map(idToken);
    expect(new Set(tokens).size).toBe(HOSTILE.length);
  });

  it('keep short ids readable and hash long ones', () => {
    expect(idToken('a')).toBe(base32(Buffer.from('a')));
    expect(idToken('x'.repeat(MAX_PLAIN_ID_BYTES))).toHaveLength(Math.ceil((MAX_PLAIN_ID_BYTES * 8) / 5));
    expect(idToken('x'.repeat(100_000))).toMatch(/^0[a-z2-7]{52}$/);
    expect(idToken('\uD800')).toMatch(/^1/);
  });

  it('base32 is RFC 4648 in lower case, without padding', () => {
    expect(base32(Buffer.from('foobar'))).toBe('mzxw6ytboi');
    expect(base32(Buffer.from(''))).toBe('');
    expect(base32(Buffer.from('f'))).toBe('my');
  });

  it('an empty id has no token', () => {
    expect(() => idToken('')).toThrow(/empty/);
  });
});

describe('fleet names', () => {
  it('addresses a node and a client by their tokens under the prefix', () => {
    const names = new FleetNames('fleet', 'node.a');
    expect(names.nodeWildcard).toBe(`fleet.n.${idToken('node.a')}.>`);
    expect(names.toNode('b*', 'call', 'c>')).toBe(`fleet.n.${idToken('b*')}.call.${idToken('c>')}`);
    expect(names.session('s 1')).toBe(`fleet.s.${idToken('s 1')}`);
    expect(names.clientKey('x.y')).toBe(`c.${idToken('x.y')}`);
    expect(names.nodesBucket).toBe('fleet-nodes');
    expect(names.inboxPrefix).toBe(`_INBOX_fleet.${idToken('node.a')}`);
  });

  it('reads back only subjects of its own shape', () => {
    const names = new FleetNames('fleet', 'a');
    const self = idToken('a');
    expect(names.parseNodeSubject(`fleet.n.${self}.call.${idToken('c')}`)).toEqual({ op: 'call', client: idToken('c') });
    expect(names.parseNodeSubject(`fleet.n.${self}.relay`)).toEqual({ op: 'relay', client: undefined });
    expect(names.parseNodeSubject(`fleet.n.${self}.call`)).toBeUndefined();
    expect(names.parseNodeSubject(`fleet.n.${self}.call.x.y`)).toBeUndefined();
    expect(names.parseNodeSubject(`fleet.n.${self}.relay.x`)).toBeUndefined();
    expect(names.parseNodeSubject(`fleet.n.${self}.other`)).toBeUndefined();
    expect(names.parseNodeSubject(`fleet.n.${idToken('b')}.relay`)).toBeUndefined();
    expect(names.parseNodeSubject(`fleet.n.${self}.call.`)).toBeUndefined();
    expect(names.parseNodeSubject(`fleet.n.${self}.catalog.${idToken('c')}`)).toEqual({ op: 'catalog', client: idToken('c') });
    expect(names.parseNodeSubject(`fleet.n.${self}.cancel`)).toEqual({ op: 'cancel', client: undefined });
    expect(names.parseNodeSubject(`fleet.n.${self}.`)).toBeUndefined();
    expect(names.parseNodeSubject(`fleet.n.${self}`)).toBeUndefined();
    expect(names.parseNodeSubject(`fleet.n.${self}x.relay`)).toBeUndefined();
  });

  it('remembers the tokens of short ids, never more than its bound, and always gives idToken', () => {
    const names = new FleetNames('fleet', 'a');
    const hostile = ['a.b', '*', '>', 'x y', '\uD800', 'é'.repeat(200), 'z'.repeat(MAX_PLAIN_ID_BYTES + 1)];
    for (const id of hostile) {
      expect(names.token(id)).toBe(idToken(id));
      expect(names.token(id)).toBe(idToken(id));
    }
    expect(names.toNode('node b', 'call', 'c.1')).toBe(`fleet.n.${idToken('node b')}.call.${idToken('c.1')}`);
    const remembered = (names as unknown as { tokens: Map<string, string> }).tokens;
    expect(remembered.has('z'.repeat(MAX_PLAIN_ID_BYTES + 1))).toBe(false);
    for (let i = 0; i < MAX_REMEMBERED_TOKENS + 10; i++) expect(names.token(`c-${i}`)).toBe(idToken(`c-${i}`));
    expect(remembered.size).toBeLessThanOrEqual(MAX_REMEMBERED_TOKENS);
    expect(names.token('c-1')).toBe(idToken('c-1'));
  });

  it('prefixes are checked, and one can be made from any cluster id', () => {
    expect(prefixProblem('mdp')).toBeUndefined();
    for (const bad of ['', 'a.b', 'a b', '*', '>', 'x'.repeat(49)]) expect(prefixProblem(bad)).toMatch(/bus prefix/);
    expect(prefixFor('team-1')).toBe('team-1');
    expect(prefixFor('team 1')).toMatch(/^mdp-[a-z2-7]{16}$/);
    expect(prefixFor('team 1')).not.toBe(prefixFor('team 2'));
    expect(() => new FleetNames('a.b', 'n')).toThrow(/bus prefix/);
  });
});
