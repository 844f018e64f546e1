import { describe, expect, it } from 'vitest';
import { silentLogger } from '@mdp/core';
import { buildMetaDocument, metaEndpoints, standaloneClusterView, type MetaDocument } from '@mdp/protocol';
import { manualClock, settle, type ManualClock } from '@mdp/test-kit';
import { TimerSet } from '../src/clock.js';
import { Discovery, DISCOVERY_DEFAULTS, type Probe } from '../src/discovery.js';
import type { ProbeResult } from '../src/meta-probe.js';

const META: MetaDocument = (() => {
  const id = '127.0.0.1:1';
  const endpoints = metaEndpoints(id);
  return buildMetaDocument(id, endpoints, standaloneClusterView('mdp', id, endpoints.ws, 4000), { upstreamProxy: true, clusterControl: true }) as MetaDocument;
})();

/** Seeds that behave three ways: `ok` answers MDP at once, `refused` fails at once, `silent` answers only when aborted. */
function fakeProbe(signals: Map<string, AbortSignal>): Probe {
  return (url, { signal }) => {
    signals.set(url, signal);
    if (url === 'ok') return Promise.resolve<ProbeResult>({ ok: true, url, meta: META });
    if (url === 'refused') return Promise.resolve<ProbeResult>({ ok: false, url, kind: 'unreachable', reason: 'connection refused' });
    return new Promise<ProbeResult>((resolve) =>
      signal.addEventListener('abort', () => resolve({ ok: false, url, kind: 'unreachable', reason: 'probe aborted' }), { once: true }),
    );
  };
}

/** A discovery of the three seeds on a manual clock: rounds 60 s apart, each probe given 80 ms. */
function start(probe: Probe, rounds: Array<{ round: number; timedOut: readonly string[] }>, found: string[]) {
  const clock = manualClock();
  const timers = new TimerSet(clock);
  const discovery = new Discovery(
    { ...DISCOVERY_DEFAULTS, attempts: 0, seedUrls: ['ok', 'refused', 'silent'], intervalMs: 60_000, probeTimeoutMs: 80 },
    { found: (_meta, url) => found.push(url), roundDone: (round, timedOut) => rounds.push({ round, timedOut }) },
    clock,
    timers,
    silentLogger,
    probe,
  );
  discovery.start();
  return { discovery, timers, clock };
}

describe('Discovery', () => {
  it('ends a round at its deadline: only the probe still without an answer counts as timed out', async () => {
    const signals = new Map<string, AbortSignal>();
    const rounds: Array<{ round: number; timedOut: readonly string[] }> = [];
    const found: string[] = [];
    const { discovery, timers, clock } = start(fakeProbe(signals), rounds, found);
    try {
      await clock.advanceSettled(79);
      expect(rounds).toEqual([]);
      expect(found).toEqual(['ok']);
      await clock.advanceSettled(1);
      expect(rounds).toEqual([{ round: 1, timedOut: ['silent'] }]);
      expect(found).toEqual(['ok']);
      // The probes of a round share one signal, aborted by the deadline.
      expect(new Set(signals.values()).size).toBe(1);
      expect(signals.get('silent')?.aborted).toBe(true);
      // Only the timer of the next round is left.
      expect(timers.size).toBe(1);
    } finally {
      discovery.close();
    }
    expect(timers.size).toBe(0);
  });

  it('a probe that throws is one address without an answer; the round still ends at its deadline', async () => {
    const signals = new Map<string, AbortSignal>();
    const base = fakeProbe(signals);
    const probe: Probe = (url, options) => {
      if (url === 'ok') throw new Error('probe bug');
      return base(url, options);
    };
    const rounds: Array<{ round: number; timedOut: readonly string[] }> = [];
    const { discovery, clock } = start(probe, rounds, []);
    try {
      await clock.advanceSettled(80);
      expect(rounds).toEqual([{ round: 1, timedOut: ['silent'] }]);
      expect(signals.get('silent')?.aborted).toBe(true);
    } finally {
      discovery.close();
    }
  });

  it('keeps running after a round whose targets could not be listed', async () => {
    const rounds: Array<{ round: number; timedOut: readonly string[] }> = [];
    let calls = 0;
    const clock: ManualClock = manualClock();
    const discovery = new Discovery(
      { ...DISCOVERY_DEFAULTS, attempts: 0, seedUrls: ['refused'], intervalMs: 20, probeTimeoutMs: 50 },
      {
        found: () => undefined,
        roundDone: (round, timedOut) => rounds.push({ round, timedOut }),
        extraTargets: () => {
          if (++calls === 1) throw new Error('directory bug');
          return [];
        },
      },
      clock,
      new TimerSet(clock),
      silentLogger,
      fakeProbe(new Map()),
    );
    discovery.start();
    try {
      await settle();
      await clock.advanceSettled(20);
      // The failed round reports no targets; the next one runs as usual.
      expect(rounds.slice(0, 2)).toEqual([
        { round: 1, timedOut: [] },
        { round: 2, timedOut: [] },
      ]);
    } finally {
      discovery.close();
    }
  });

  it('close() aborts the probes in flight and reports no round', async () => {
    const signals = new Map<string, AbortSignal>();
    const rounds: Array<{ round: number; timedOut: readonly string[] }> = [];
    const { discovery, timers, clock } = start(fakeProbe(signals), rounds, []);
    await settle();
    expect(signals.get('silent')?.aborted).toBe(false);
    discovery.close();
    expect(signals.get('silent')?.aborted).toBe(true);
    // Past the round's deadline and the next round's start: nothing reports, nothing is left.
    await clock.advanceSettled(120_000);
    expect(rounds).toEqual([]);
    expect(timers.size).toBe(0);
    expect(clock.pending()).toBe(0);
  });
});
