/** The port rules of cluster.ts: which ports a server falls back to, and which default port it may serve. */
import { describe, expect, it } from 'vitest';
import { defaultPortOf, portFallbackOf } from '../src/cluster.js';

const RANGE = { startPort: 5000, attempts: 4 };

describe('portFallbackOf', () => {
  it('falls back through the rest of the range in auto mode when no port was given', () => {
    const ports = portFallbackOf({ discovery: RANGE }, 5001, false);
    expect(ports?.()).toEqual([5002, 5003, 5000]);
    expect(portFallbackOf({ mode: 'auto', discovery: RANGE }, 5000, false)?.()).toEqual([5001, 5002, 5003]);
  });

  it('does not fall back for a port given explicitly, nor outside auto mode, nor without a cluster', () => {
    expect(portFallbackOf({ discovery: RANGE }, 5001, true)).toBeUndefined();
    expect(portFallbackOf({ mode: 'proxy-required', discovery: RANGE }, 5001, false)).toBeUndefined();
    expect(portFallbackOf({ mode: 'standalone' }, 5001, false)).toBeUndefined();
    expect(portFallbackOf(undefined, 5001, false)).toBeUndefined();
  });

  it('portFallback says so either way', () => {
    expect(portFallbackOf({ portFallback: true, discovery: RANGE }, 5001, true)?.()).toEqual([5002, 5003, 5000]);
    expect(portFallbackOf({ mode: 'proxy-required', portFallback: true, discovery: RANGE }, 5003, false)?.()).toEqual([5000, 5001, 5002]);
    expect(portFallbackOf({ portFallback: false, discovery: RANGE }, 5001, false)).toBeUndefined();
  });
});

describe('defaultPortOf', () => {
  it('is the first port of the range for an auto cluster on the range host', () => {
    expect(defaultPortOf({ discovery: RANGE }, '127.0.0.1')).toBe(5000);
    expect(defaultPortOf({ discovery: RANGE }, 'localhost')).toBe(5000);
    expect(defaultPortOf({ discovery: RANGE }, '0.0.0.0')).toBe(5000);
  });

  it('is none outside auto mode, when turned off, without a range, or for a range on another host', () => {
    expect(defaultPortOf(undefined, '127.0.0.1')).toBeUndefined();
    expect(defaultPortOf({ mode: 'proxy-required', discovery: RANGE }, '127.0.0.1')).toBeUndefined();
    expect(defaultPortOf({ serveDefaultPort: false, discovery: RANGE }, '127.0.0.1')).toBeUndefined();
    expect(defaultPortOf({ discovery: { ...RANGE, attempts: 0 } }, '127.0.0.1')).toBeUndefined();
    expect(defaultPortOf({ discovery: { ...RANGE, host: '10.0.0.5' } }, '127.0.0.1')).toBeUndefined();
  });
});
