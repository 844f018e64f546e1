/** Credentials a URL carries stay out of logs and printed settings. */
import { describe, expect, it } from 'vitest';
import { redactUrl } from '../src/index.js';

describe('redactUrl', () => {
  it.each([
    ['ws://user:pw@127.0.0.1:47372/mdp', 'ws://***:***@127.0.0.1:47372/mdp'],
    ['wss://token@hub.example/?key=1&x=2', 'wss://***@hub.example/?***'],
    ['http://127.0.0.1:47372/?token=abc', 'http://127.0.0.1:47372/?***'],
  ])('hides the credentials of %s', (url, redacted) => {
    expect(redactUrl(url)).toBe(redacted);
  });

  it.each(['ws://127.0.0.1:47372', 'http://hub.example/mdp/meta', '127.0.0.1:47372', '47372', 'not a url'])('leaves %s as it is', (text) => {
    expect(redactUrl(text)).toBe(text);
  });
});
