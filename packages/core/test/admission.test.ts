import { describe, expect, it } from 'vitest';
import { Admission } from '../src/index.js';

describe('Admission', () => {
  it('admits up to the per-address cap, then refuses that address only', () => {
    const admission = new Admission({ total: 10, perAddress: 2 }, 'websocket connections');
    expect(admission.admit('10.0.0.1')).toBeUndefined();
    expect(admission.admit('10.0.0.1')).toBeUndefined();
    expect(admission.admit('10.0.0.1')).toBe('Too many websocket connections from this address (limit 2); try again later');
    expect(admission.admit('10.0.0.2')).toBeUndefined();
    expect(admission.size).toBe(3);
    expect(admission.countOf('10.0.0.1')).toBe(2);
  });

  it('refuses everyone at the total cap and admits again after a release', () => {
    const admission = new Admission({ total: 2, perAddress: 2 }, 'HTTP loop sessions');
    expect(admission.admit('a')).toBeUndefined();
    expect(admission.admit('b')).toBeUndefined();
    expect(admission.admit('c')).toBe('Too many HTTP loop sessions (limit 2); try again later');
    admission.release('a');
    expect(admission.admit('c')).toBeUndefined();
    expect(admission.size).toBe(2);
  });

  it('counts an unknown address as one address, and forgets released addresses', () => {
    const admission = new Admission({ total: 5, perAddress: 1 }, 'x');
    expect(admission.admit(undefined)).toBeUndefined();
    expect(admission.admit(undefined)).toMatch(/from this address/);
    admission.release(undefined);
    expect(admission.countOf(undefined)).toBe(0);
    // A release that was never admitted changes nothing.
    admission.release('never');
    expect(admission.size).toBe(0);
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses %s as a cap', (value) => {
    expect(() => new Admission({ total: value, perAddress: 1 }, 'x')).toThrow(RangeError);
    expect(() => new Admission({ total: 1, perAddress: value }, 'x')).toThrow(RangeError);
  });
});
