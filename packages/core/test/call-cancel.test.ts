/**
 * CallCancel (call-cancel.ts): the light abort signal of remote calls behaves as an AbortSignal
 * does for the calls that listen to it.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CallCancel, RemoteCallHandle } from '../src/index.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('CallCancel', () => {
  it('runs each listener once, in order, and none removed or added after the abort', () => {
    const cancel = new CallCancel();
    const heard: string[] = [];
    const removed = (): void => void heard.push('removed');
    cancel.addEventListener('abort', () => heard.push('first'));
    cancel.addEventListener('abort', removed);
    cancel.addEventListener('abort', () => heard.push('second'));
    cancel.removeEventListener('abort', removed);
    cancel.removeEventListener('abort', () => undefined);
    expect(cancel.aborted).toBe(false);
    cancel.abort();
    expect(cancel.aborted).toBe(true);
    cancel.abort();
    cancel.addEventListener('abort', () => heard.push('late'));
    cancel.abort();
    expect(heard).toEqual(['first', 'second']);
  });

  it('runs the other listeners when one throws, and reports the error later', () => {
    const reported: (() => void)[] = [];
    vi.spyOn(globalThis, 'queueMicrotask').mockImplementation((task) => void reported.push(task));
    const cancel = new CallCancel();
    const heard: string[] = [];
    cancel.addEventListener('abort', () => {
      throw new Error('listener failed');
    });
    cancel.addEventListener('abort', () => heard.push('after'));
    expect(() => cancel.abort()).not.toThrow();
    expect(heard).toEqual(['after']);
    expect(reported).toHaveLength(1);
    expect(() => reported[0]?.()).toThrow('listener failed');
  });
});

describe('RemoteCallHandle', () => {
  it('aborts its signal on cancel and keeps one request id', () => {
    const handle = new RemoteCallHandle();
    const heard: string[] = [];
    handle.signal.addEventListener('abort', () => heard.push('aborted'));
    const id = handle.requestId;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(handle.requestId).toBe(id);
    expect(new RemoteCallHandle().requestId).not.toBe(id);
    handle.cancel();
    handle.cancel();
    expect(handle.signal.aborted).toBe(true);
    expect(heard).toEqual(['aborted']);
  });
});
