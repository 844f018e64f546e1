/**
 * What README "Run a fleet" claims of the load balancer in front of a fleet and a test can check
 * without nginx: docs/deploy/nginx-fleet.conf spreads requests over the nodes without stickiness,
 * passes websocket upgrades on, outwaits the longest long poll and takes the largest message.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVER_DEFAULTS } from '@mdp/server';
import { MAX_WAIT_MS } from '@mdp/transport-http-loop';
import { REPO } from './helpers.js';

const conf = readFileSync(join(REPO, 'docs/deploy/nginx-fleet.conf'), 'utf8');
/** Directives, comments removed. */
const code = conf.replace(/#.*$/gm, '');
const directive = (name: string): string => new RegExp(`^\\s*${name}\\s+([^;]+);`, 'm').exec(code)?.[1] ?? '';

describe('the load balancer of a fleet (docs/deploy/nginx-fleet.conf)', () => {
  it('round-robins over several nodes, with no sticky sessions', () => {
    const upstream = /upstream mdp_fleet \{([^}]*)\}/.exec(code)?.[1] ?? '';
    expect(upstream.match(/^\s*server\s+\S+:\d+/gm)?.length).toBeGreaterThanOrEqual(2);
    expect(upstream).not.toMatch(/\b(ip_hash|hash|sticky|least_conn)\b/);
    expect(directive('proxy_pass')).toBe('http://mdp_fleet');
  });

  it('passes websocket upgrades on, and keeps upstream connections for the rest', () => {
    expect(directive('proxy_http_version')).toBe('1.1');
    expect(directive('proxy_set_header Upgrade')).toBe('$http_upgrade');
    expect(directive('proxy_set_header Connection')).toBe('$connection_upgrade');
    expect(code).toMatch(/map \$http_upgrade \$connection_upgrade \{\s*default upgrade;\s*''\s*'';\s*\}/);
  });

  it('waits longer than the longest long poll and a quiet websocket, takes the largest message, never retries a POST', () => {
    for (const name of ['proxy_read_timeout', 'proxy_send_timeout']) {
      const seconds = Number(/^(\d+)s$/.exec(directive(name))?.[1]);
      expect(seconds * 1000, name).toBeGreaterThan(MAX_WAIT_MS);
      expect(seconds * 1000, name).toBeGreaterThan(SERVER_DEFAULTS.heartbeatIntervalMs);
    }
    expect(directive('proxy_buffering')).toBe('off');
    const megabytes = Number(/^(\d+)m$/.exec(directive('client_max_body_size'))?.[1]);
    expect(megabytes * 1024 * 1024).toBeGreaterThanOrEqual(SERVER_DEFAULTS.maxMessageBytes);
    expect(directive('proxy_next_upstream')).not.toContain('non_idempotent');
  });
});
