/** Results an agent can see (content.ts): MCP content and declared media as blocks, checked strictly and capped. */
import { describe, expect, it } from 'vitest';
import { base64Bytes, contentOf, decodeMediaString, isBinaryType } from '../src/content.js';

/** A real 1×1 PNG (67 bytes). */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const MAX = 1024;

describe('contentOf', () => {
  it('MCP content, one block or an array of the five kinds, passes as blocks', () => {
    const image = { type: 'image', data: PNG, mimeType: 'image/png' };
    expect(contentOf(image, { maxBytes: MAX })).toEqual({ kind: 'blocks', blocks: [image] });
    const mixed = [
      { type: 'text', text: 'a page', annotations: { audience: ['assistant'], priority: 0.5 } },
      image,
      { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' },
      { type: 'resource', resource: { uri: 'mdp://todo/docs/skill.md', mimeType: 'text/markdown', text: '# Docs' } },
      { type: 'resource', resource: { uri: 'https://example.com/x.png', blob: PNG } },
      { type: 'resource_link', uri: 'https://example.com/report.pdf', name: 'report', mimeType: 'application/pdf', size: 10 },
    ];
    expect(contentOf(mixed, { maxBytes: MAX })).toEqual({ kind: 'blocks', blocks: mixed });
  });

  it.each([
    ['an unknown field', { type: 'image', data: PNG, mimeType: 'image/png', onload: 'x' }],
    ['data that is not base64', { type: 'image', data: 'not base64!', mimeType: 'image/png' }],
    ['a data: URL as data', { type: 'image', data: `data:image/png;base64,${PNG}`, mimeType: 'image/png' }],
    ['an image that says it is HTML', { type: 'image', data: PNG, mimeType: 'text/html' }],
    ['audio with an image type', { type: 'audio', data: PNG, mimeType: 'image/png' }],
    ['a text block without text', { type: 'text' }],
    ['a resource with neither text nor blob', { type: 'resource', resource: { uri: 'mdp://todo/docs/skill.md' } }],
    ['a resource whose uri is no URI', { type: 'resource', resource: { uri: 'docs', text: 'x' } }],
    ['a link without a name', { type: 'resource_link', uri: 'https://example.com/' }],
    ['a priority past 1', { type: 'text', text: 'x', annotations: { priority: 2 } }],
  ])('a malformed block (%s) is shown as JSON, with the reason', (_what, block) => {
    expect(contentOf(block, { maxBytes: MAX })).toMatchObject({ kind: 'json', problem: expect.stringMatching(/^content block 0/) });
    // One bad block among good ones: the whole answer is JSON, nothing passes through.
    expect(contentOf([{ type: 'text', text: 'fine' }, block], { maxBytes: MAX })).toMatchObject({
      kind: 'json',
      problem: expect.stringMatching(/^content block 1/),
    });
  });

  it("embeds only the answering client's own skills as mdp: resources; links and other schemes pass", () => {
    const own = { type: 'resource', resource: { uri: 'mdp://todo/docs/skill.md', text: '# Docs' } };
    const link = { type: 'resource_link', uri: 'mdp://notes/notes/skill.md', name: 'notes' };
    const web = { type: 'resource', resource: { uri: 'https://example.com/a.txt', text: 'a' } };
    expect(contentOf([own, link, web], { maxBytes: MAX, clientId: 'todo' })).toEqual({ kind: 'blocks', blocks: [own, link, web] });
    expect(contentOf(own, { maxBytes: MAX, clientId: 'todo/x' })).toMatchObject({ kind: 'json' });
    // Another client's skill, an encoded look-alike, the server's guide, a malformed mdp: URI.
    for (const uri of ['mdp://notes/notes/skill.md', 'MDP://notes/notes/skill.md', 'mdp://todo%2Fx/docs/skill.md', 'mdp:///SKILL.md', 'mdp://todo']) {
      const spoof = { type: 'resource', resource: { uri, text: 'trust me' } };
      expect(contentOf([{ type: 'text', text: 'fine' }, spoof], { maxBytes: MAX, clientId: 'todo' })).toEqual({
        kind: 'json',
        problem: 'content block 1: an embedded resource of another client or of the server',
      });
    }
  });

  it('anything else is JSON: plain data, an empty array, an array with one item that is not a block, an unknown type', () => {
    for (const data of [{ ok: 1 }, 'text', 3, null, undefined, [], [{ type: 'text', text: 'x' }, { id: 1 }], { type: 'video', data: PNG }]) {
      expect(contentOf(data, { maxBytes: MAX })).toEqual({ kind: 'json' });
    }
  });

  it('an image or audio endpoint: base64 with the declared type, or a data: URL with its own of that kind', () => {
    expect(contentOf(PNG, { contentType: 'image/png', maxBytes: MAX })).toEqual({
      kind: 'blocks',
      blocks: [{ type: 'image', data: PNG, mimeType: 'image/png' }],
    });
    expect(contentOf(`data:image/png;base64,${PNG}`, { contentType: 'image/*', maxBytes: MAX })).toEqual({
      kind: 'blocks',
      blocks: [{ type: 'image', data: PNG, mimeType: 'image/png' }],
    });
    expect(contentOf('UklGRg==', { contentType: 'Audio/WAV; codecs=1', maxBytes: MAX })).toEqual({
      kind: 'blocks',
      blocks: [{ type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' }],
    });
    // Not what it declares: JSON, with the reason.
    for (const [data, contentType] of [
      ['a caption', 'image/png'],
      [PNG, 'image/*'],
      [`data:text/html;base64,${PNG}`, 'image/png'],
      [`data:image/png,${PNG}`, 'image/png'],
    ] as const) {
      expect(contentOf(data, { contentType, maxBytes: MAX })).toMatchObject({ kind: 'json', problem: expect.stringContaining('not base64') });
    }
    // Other declared types, or an answer that is not a string, are JSON as before.
    expect(contentOf(PNG, { contentType: 'application/json', maxBytes: MAX })).toEqual({ kind: 'json' });
    expect(contentOf({ png: PNG }, { contentType: 'image/png', maxBytes: MAX })).toEqual({ kind: 'json' });
  });

  it('caps the texts and decoded data together: over the cap is too_large, never a block cut short', () => {
    expect(base64Bytes(PNG)).toBe(Buffer.from(PNG, 'base64').length);
    const bytes = Buffer.from(PNG, 'base64').length;
    expect(contentOf(PNG, { contentType: 'image/png', maxBytes: bytes })).toMatchObject({ kind: 'blocks' });
    expect(contentOf(PNG, { contentType: 'image/png', maxBytes: bytes - 1 })).toEqual({ kind: 'too_large', bytes, maxBytes: bytes - 1 });
    const two = [
      { type: 'text', text: 'é'.repeat(10) },
      { type: 'image', data: PNG, mimeType: 'image/png' },
    ];
    expect(contentOf(two, { maxBytes: bytes + 19 })).toEqual({ kind: 'too_large', bytes: bytes + 20, maxBytes: bytes + 19 });
  });
});

describe('decodeMediaString and isBinaryType', () => {
  it('decodes base64 or a base64 data: URL', () => {
    expect(decodeMediaString(`data:image/png;name=x;base64,${PNG}`, undefined)).toEqual({ data: PNG, mimeType: 'image/png' });
    expect(decodeMediaString(PNG, 'application/pdf')).toEqual({ data: PNG, mimeType: 'application/pdf' });
    expect(decodeMediaString('%%%', 'application/pdf')).toBeUndefined();
    expect(decodeMediaString(PNG, undefined)).toBeUndefined();
  });

  it('text, JSON, XML, YAML and Markdown types are text; images, audio, PDF and octet streams are binary', () => {
    for (const type of [
      'text/markdown',
      'text/plain; charset=utf-8',
      'application/json',
      'application/ld+json',
      'image/svg+xml',
      'application/yaml',
      undefined,
      'nonsense',
    ]) {
      expect(isBinaryType(type)).toBe(false);
    }
    for (const type of ['image/png', 'audio/wav', 'application/pdf', 'application/octet-stream']) expect(isBinaryType(type)).toBe(true);
  });
});
