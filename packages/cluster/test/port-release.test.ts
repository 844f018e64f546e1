/** The request that asks a member to give a port back (port-release.ts): made and checked without sockets. */
import { describe, expect, it } from 'vitest';
import { helloProof } from '../src/membership.js';
import { RELEASE_MAX_AGE_MS, checkPortRelease, portReleaseRequest } from '../src/port-release.js';

const NOW = 1_800_000_000_000;
const OWNER = '127.0.0.1:4000';
const HOLDER = '127.0.0.1:4001';
const claim = { serverId: OWNER, to: HOLDER, port: 4000, timestamp: NOW };
const rules = (over: Partial<Parameters<typeof checkPortRelease>[1]> = {}) => ({
  secrets: ['s3cret'],
  clusterId: 'c1',
  self: HOLDER,
  now: NOW + 1000,
  ...over,
});

describe('port release requests', () => {
  it('prove the cluster secret to the holder they name, for the port they name', () => {
    const body = portReleaseRequest('s3cret', 'c1', claim);
    const checked = checkPortRelease(body, rules({ secrets: ['older', 's3cret'] }));
    expect(checked).toEqual({ ok: true, claim, key: body.proof });
    // Through JSON, as it travels.
    expect(checkPortRelease(JSON.parse(JSON.stringify(body)), rules())).toMatchObject({ ok: true });
  });

  it('prove nothing under another secret, for another holder or cluster, or out of the time window', () => {
    const body = portReleaseRequest('s3cret', 'c1', claim);
    const refused = (over: Partial<Parameters<typeof checkPortRelease>[1]>) => checkPortRelease(body, rules(over));
    expect(refused({ secrets: ['wrong'] })).toEqual({ ok: false, status: 403, reason: 'cluster secret not proven' });
    expect(refused({ self: '127.0.0.1:4002' })).toMatchObject({ ok: false, status: 403, reason: 'the request is meant for another server' });
    expect(refused({ clusterId: 'c2' })).toMatchObject({ ok: false, status: 403 });
    expect(refused({ now: NOW + RELEASE_MAX_AGE_MS + 1 })).toMatchObject({ ok: false, status: 403 });
    expect(refused({ now: NOW - RELEASE_MAX_AGE_MS - 1 })).toMatchObject({ ok: false, status: 403 });
    expect(refused({ now: NOW + RELEASE_MAX_AGE_MS })).toMatchObject({ ok: true });
  });

  it('is bound to every field: a changed port, owner, holder or time is not proven', () => {
    const body = portReleaseRequest('s3cret', 'c1', claim);
    for (const changed of [{ port: 4005 }, { serverId: '127.0.0.1:4009' }, { timestamp: NOW + 1 }]) {
      expect(checkPortRelease({ ...body, ...changed }, rules())).toMatchObject({ ok: false, status: 403, reason: 'cluster secret not proven' });
    }
    const { proof: _proof, ...unproven } = body;
    expect(checkPortRelease(unproven, rules())).toMatchObject({ ok: false, status: 403, reason: 'cluster secret not proven' });
  });

  it('is not a hello proof, nor the other way round', () => {
    const hello = helloProof('s3cret', 'c1', OWNER, NOW, HOLDER);
    const body = { ...portReleaseRequest('s3cret', 'c1', claim), proof: hello };
    expect(checkPortRelease(body, rules())).toMatchObject({ ok: false, status: 403 });
    expect(portReleaseRequest('s3cret', 'c1', claim).proof).not.toBe(hello);
  });

  it('in an open cluster asks for no proof, only the cluster id; its key is the request itself', () => {
    const body = portReleaseRequest(undefined, 'c1', claim);
    expect(body).not.toHaveProperty('proof');
    const checked = checkPortRelease(body, rules({ secrets: [] }));
    expect(checked).toMatchObject({ ok: true, claim });
    expect(checkPortRelease({ ...body, clusterId: 'c2' }, rules({ secrets: [] }))).toMatchObject({ ok: false, status: 403 });
    // A request without a proof is refused where there is a secret.
    expect(checkPortRelease(body, rules())).toMatchObject({ ok: false, status: 403 });
  });

  it('refuses what is not a release request with 400, naming the field', () => {
    const body = portReleaseRequest('s3cret', 'c1', claim);
    for (const bad of [
      null,
      'x',
      [],
      {},
      { ...body, port: 0 },
      { ...body, port: 65536 },
      { ...body, port: 1.5 },
      { ...body, timestamp: 'now' },
      { ...body, serverId: '' },
      { ...body, proof: 'x'.repeat(200) },
    ]) {
      const checked = checkPortRelease(bad, rules());
      expect(checked).toMatchObject({ ok: false, status: 400 });
      if (!checked.ok) expect(checked.reason).toMatch(/^not a port release request: /);
    }
    expect(checkPortRelease({ ...body, port: 0 }, rules())).toMatchObject({ reason: expect.stringContaining('port') });
  });
});
