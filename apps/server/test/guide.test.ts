/** The text of the server's guide (guide.ts), from facts alone. The route and the MCP resource: guide.e2e.test.ts. */
import { describe, expect, it } from 'vitest';
import { guideText, type GuideFacts } from '../src/guide.js';

const base: GuideFacts = {
  http: 'http://127.0.0.1:47400',
  serverId: '127.0.0.1:47400',
  clients: 0,
  mirrored: 0,
  paths: 0,
  cluster: undefined,
  example: undefined,
  mcp: 'http://127.0.0.1:47400/mcp',
  mcpResource: 'mdp:///SKILL.md',
  guarded: false,
};

const guide = (facts: Partial<GuideFacts>): string => guideText({ ...base, ...facts });

describe('the guide', () => {
  it('names every URL of the host API, the skill routes and MCP on the given base', () => {
    const text = guide({});
    for (const url of [
      '/mdp/clients',
      '/mdp/paths?clientId=<id>',
      '/mdp/call',
      '/mdp/call-many',
      '/skills/<clientId>/<path>',
      '/<clientId>/skills/<path>',
      '/mdp/meta',
      '/mdp/inspector',
    ]) {
      expect(text).toContain(`${base.http}${url}`);
    }
    expect(text).toContain('`http://127.0.0.1:47400/mcp`');
    expect(text).toContain('`mdp:///SKILL.md`');
    expect(text).toContain('`MDP-Error-Code`');
    // Listings come in pages: an agent with only HTTP must know to follow the cursor.
    expect(text).toContain('`cursor=<nextCursor>`');
    expect(text).toMatch(/^# MDP server 127\.0\.0\.1:47400\n/);
    expect(text).toContain('No client is connected right now');
    expect(text).not.toContain('credential: send');
  });

  it('counts clients and paths, in the singular too', () => {
    expect(guide({ clients: 1, paths: 1 })).toContain('1 client connected here, publishing 1 path in all.');
    expect(guide({ clients: 3, paths: 12 })).toContain('3 clients connected here, publishing 12 paths in all.');
  });

  it('shows a skill of a connected client through both routes, its id percent-encoded', () => {
    const text = guide({ clients: 1, paths: 1, example: { clientId: 'my app/1', path: '/docs/skill.md' } });
    expect(text).toContain('- `GET http://127.0.0.1:47400/skills/my%20app%2F1/docs/skill.md`');
    expect(text).toContain('- `GET http://127.0.0.1:47400/my%20app%2F1/skills/docs/skill.md`');
    // The raw id (which could hold Markdown) never stands outside a URL.
    expect(text).not.toContain('my app/1');
  });

  it('a client named mdp or skills has only the direct route (the nested one never takes those ids)', () => {
    const text = guide({ clients: 1, paths: 1, example: { clientId: 'skills', path: '/docs/skill.md' } });
    expect(text).toContain('/skills/skills/docs/skill.md');
    expect(text).not.toContain('/skills/skills/skills');
  });

  it('says what the counts are in a cluster: a leader holds the mirrors, a follower only its own', () => {
    expect(guide({ clients: 3, mirrored: 2, cluster: { role: 'leader', leaderId: 'a' } })).toContain('2 clients are mirrored here from other members');
    expect(guide({ clients: 1, cluster: { role: 'leader', leaderId: 'a' } })).not.toContain('mirrored');
    expect(guide({ clients: 1, cluster: { role: 'follower', leaderId: 'node-a' } })).toContain(
      'This node is a follower in a cluster (the leader is `node-a`): these counts are its own clients; the host API answers for every client of the cluster.',
    );
    expect(guide({ cluster: { role: 'candidate', leaderId: '' } })).toContain('(no leader is known yet)');
  });

  it('says when a credential is needed, and when MCP is not served', () => {
    expect(guide({ guarded: true })).toContain('send `Authorization: Bearer <token>` with every request below');
    const text = guide({ mcp: undefined });
    expect(text).toContain('does not serve MCP over HTTP');
    expect(text).not.toContain('/mcp');
  });
});
