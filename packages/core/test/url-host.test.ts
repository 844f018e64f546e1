/** urlHost: the one place a host is made fit for a URL or a `host:port` authority. */
import { describe, expect, it } from 'vitest';
import { urlHost } from '../src/index.js';

describe('urlHost', () => {
  it('brackets IPv6 addresses', () => {
    expect(urlHost('::1')).toBe('[::1]');
    expect(urlHost('::')).toBe('[::]');
    expect(urlHost('fe80::1%eth0')).toBe('[fe80::1%eth0]');
    expect(new URL(`http://${urlHost('::1')}:47372`).hostname).toBe('[::1]');
  });

  it('leaves names, IPv4 addresses and bracketed hosts alone', () => {
    for (const host of ['localhost', 'mdp.example', '127.0.0.1', '0.0.0.0', '[::1]', '']) expect(urlHost(host)).toBe(host);
  });
});
