/** The stdout lines that say who leads: every change, and never a leadership that ended. */
import { describe, expect, it } from 'vitest';
import type { ClusterNode, LeaderChange } from '@mdp/cluster';
import { standaloneClusterView } from '@mdp/protocol';
import { announceLeadership } from '../src/cluster.js';

function fakeNode(mode: ClusterNode['mode'] = 'auto') {
  const listeners = new Set<(change: LeaderChange) => void>();
  let view = { ...standaloneClusterView('c', 'me', 'ws://me', 4000), role: 'follower' as const, leaderId: '', leaderUrl: '', term: 0 };
  const node = {
    clusterId: 'c',
    mode,
    meta: () => view,
    onLeaderChange(listener: (change: LeaderChange) => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  } as unknown as ClusterNode;
  const change = (role: LeaderChange['role'], term: number, leaderId?: string) => {
    view = { ...view, role: role as 'follower', term, leaderId: leaderId ?? '', leaderUrl: leaderId ? `ws://${leaderId}` : '' };
    for (const l of listeners) l({ role, term, leaderId, leaderUrl: leaderId ? `ws://${leaderId}` : undefined, previousLeaderId: undefined });
  };
  return { node, change, listeners };
}

describe('announceLeadership', () => {
  it('says when this node leads, when it stepped down, and whom it follows next', () => {
    const { node, change } = fakeNode();
    const lines: string[] = [];
    announceLeadership(node, (line) => lines.push(line));
    expect(lines).toEqual([]);
    change('candidate', 1);
    change('leader', 1, 'me');
    change('follower', 1);
    change('candidate', 2);
    change('follower', 3, 'other');
    change('follower', 3, 'other');
    expect(lines).toEqual([
      'cluster c: this node is the leader (term 1)',
      'cluster c: this node stepped down (term 1); electing a leader',
      'cluster c: following other at ws://other (term 3)',
    ]);
  });

  it('a follower losing its leader says nothing until it knows the next one', () => {
    const { node, change } = fakeNode();
    const lines: string[] = [];
    announceLeadership(node, (line) => lines.push(line));
    change('follower', 1, 'a');
    change('follower', 1);
    change('leader', 2, 'me');
    expect(lines).toEqual(['cluster c: following a at ws://a (term 1)', 'cluster c: this node is the leader (term 2)']);
  });

  it('a standalone node leads at once, for good', () => {
    const { node, listeners } = fakeNode('standalone');
    const lines: string[] = [];
    announceLeadership(node, (line) => lines.push(line));
    expect(lines).toEqual(['cluster c: standalone, this node is the hub (leader, term 0)']);
    expect(listeners.size).toBe(0);
  });

  it('stops printing once unsubscribed', () => {
    const { node, change } = fakeNode();
    const lines: string[] = [];
    announceLeadership(node, (line) => lines.push(line))();
    change('leader', 1, 'me');
    expect(lines).toEqual([]);
  });
});
