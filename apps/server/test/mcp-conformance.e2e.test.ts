/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, server scenarios) against
 * the built `mdp-server` over Streamable HTTP at `/mcp`, with two real MDP clients (one on the
 * websocket, one on the HTTP loop) publishing the suite's fixture tools and prompts as endpoints and
 * prompts, so that the scenarios that call them test the bridge, not an empty catalog.
 *
 * The suite needs Node 22; `scripts/install-mcp-conformance.sh` (run by `.ci/run`) puts a Node 22
 * binary and the pinned suite in a cache directory outside the repository. Without them this file is
 * skipped with a warning, as the browser tests are without Chromium.
 *
 * Every scenario the suite runs is classified below: it must pass (APPLIES), or it cannot apply to
 * a server whose catalog comes from MDP clients (NOT_APPLICABLE, with the reason). A scenario in
 * neither list (a new suite version) fails the test until it is classified.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { CallClientMessage } from '@mdp/protocol';
import { ClientFailure, LoopTestClient, TestClient, descriptor, endpoint, prompt, stopAll, track } from '@mdp/test-kit';
import { CLI } from './mcp-harness.js';
import { png } from './png.js';

const SUITE_DIR = process.env.MDP_MCP_CONFORMANCE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'mdp-server', 'mcp-conformance');
const NODE_22 = join(SUITE_DIR, 'node_modules', `node-${process.platform}-${process.arch}`, 'bin', 'node');
const SUITE = join(SUITE_DIR, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const HAVE_SUITE = existsSync(NODE_22) && existsSync(SUITE);
if (!HAVE_SUITE) {
  console.warn(
    `[mcp-conformance.e2e] SKIPPED: the MCP conformance suite or its Node 22 is not in ${SUITE_DIR}. ` +
      'Run scripts/install-mcp-conformance.sh (.ci/run does this) to run the official MCP conformance scenarios.',
  );
}

/** Scenarios that apply to any MCP server: they need nothing from the catalog. */
const ANY_SERVER = [
  'server-initialize',
  'ping',
  'logging-set-level',
  'completion-complete',
  'tools-list',
  'resources-list',
  'prompts-list',
  'server-sse-multiple-streams',
  'dns-rebinding-protection',
] as const;

/** Scenarios that call the suite's fixture tools and prompts, which the MDP clients below publish. */
const WITH_FIXTURE_CLIENTS = [
  'tools-call-simple-text',
  'tools-call-error',
  'tools-call-image',
  'tools-call-audio',
  'tools-call-embedded-resource',
  'tools-call-mixed-content',
  'prompts-get-simple',
  'prompts-get-with-args',
  'prompts-get-embedded-resource',
  'prompts-get-with-image',
] as const;

const APPLIES: readonly string[] = [...ANY_SERVER, ...WITH_FIXTURE_CLIENTS];

/** Scenarios that cannot apply, and why. */
const NOT_APPLICABLE: Readonly<Record<string, string>> = {
  'tools-call-with-logging':
    "the tool itself sends log messages while it runs: an MDP endpoint answers once and has no channel to the agent during a call (the server's own log messages are tested in mcp-depth.e2e)",
  'tools-call-with-progress': 'the tool itself reports progress while it runs: an MDP endpoint cannot (callPaths progress is tested in mcp-depth.e2e)',
  'tools-call-sampling': "the tool asks the agent's host for a completion (sampling/createMessage): an MDP client cannot ask the agent anything",
  'tools-call-elicitation': "the tool asks the user through the agent's host (elicitation/create): an MDP client cannot",
  'elicitation-sep1034-defaults': 'elicitation, as above',
  'elicitation-sep1330-enums': 'elicitation, as above',
  'json-schema-2020-12':
    "the tool must list its input schema exactly as written ($schema, $defs): the bridge builds each tool's input schema itself (path parameters merged, untrusted schemas cleaned and capped)",
  'resources-read-text':
    "reads the fixture resource test://static-text: this server's resources are its clients' skills, mdp://<clientId>/<path>, which no client can name test://",
  'resources-read-binary': 'reads test://static-binary: as above',
  'resources-templates-read': 'reads the template test://template/{id}/data: as above',
  'resources-subscribe': 'subscribes to test://watched-resource: as above (subscriptions to mdp:// skills are tested in mcp-depth.e2e)',
  'resources-unsubscribe': 'unsubscribes from test://watched-resource: as above',
};

const PNG = png(1, 1).toString('base64');

/** A real WAV: RIFF header, 8 kHz mono 16-bit PCM, 8 samples of silence. */
function wav(): string {
  const samples = Buffer.alloc(16);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + samples.length, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(8000, 24);
  header.writeUInt32LE(16000, 28); // byte rate
  header.writeUInt16LE(2, 32); // block align
  header.writeUInt16LE(16, 34); // bits per sample
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(samples.length, 40);
  return Buffer.concat([header, samples]).toString('base64');
}

/**
 * The suite's fixture tools, as endpoints of a websocket client. Their answers are the fixture's
 * results in MDP's convention: a string, a client error, or MCP content blocks (shown to the agent
 * as blocks, the bridge's README says how).
 */
const TOOLS = descriptor('conformance-tools', [
  endpoint('/test_simple_text', 'POST', { description: 'Returns simple text' }),
  endpoint('/test_error_handling', 'POST', { description: 'Always fails' }),
  endpoint('/test_image_content', 'POST', { description: 'Returns an image' }),
  endpoint('/test_audio_content', 'POST', { description: 'Returns audio' }),
  endpoint('/test_embedded_resource', 'POST', { description: 'Returns an embedded resource' }),
  endpoint('/test_multiple_content_types', 'POST', { description: 'Returns text, an image and a resource' }),
]);

function toolAnswer(call: CallClientMessage): unknown {
  switch (call.path) {
    case '/test_simple_text':
      return 'This is a simple text response for testing.';
    case '/test_error_handling':
      return new ClientFailure({ code: 'handler_error', message: 'This tool intentionally returns an error for testing' });
    case '/test_image_content':
      return { type: 'image', data: PNG, mimeType: 'image/png' };
    case '/test_audio_content':
      return { type: 'audio', data: wav(), mimeType: 'audio/wav' };
    case '/test_embedded_resource':
      return { type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } };
    case '/test_multiple_content_types':
      return [
        { type: 'text', text: 'Multiple content types test:' },
        { type: 'image', data: PNG, mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
      ];
    default:
      return new ClientFailure({ code: 'not_found', message: `no ${call.path}` });
  }
}

/** The suite's fixture prompts, as prompts of an HTTP loop client. */
const PROMPTS = descriptor('conformance-prompts', [
  prompt('/test_simple_prompt/prompt.md', { description: 'A simple prompt' }),
  prompt('/test_prompt_with_arguments/prompt.md', {
    description: 'A prompt with arguments',
    inputSchema: { type: 'object', properties: { arg1: { type: 'string' }, arg2: { type: 'string' } }, required: ['arg1', 'arg2'] },
  }),
  prompt('/test_prompt_with_embedded_resource/prompt.md', {
    description: 'A prompt with an embedded resource',
    inputSchema: { type: 'object', properties: { resourceUri: { type: 'string' } }, required: ['resourceUri'] },
  }),
  prompt('/test_prompt_with_image/prompt.md', { description: 'A prompt with an image' }),
]);

function promptAnswer(call: CallClientMessage): unknown {
  const query = call.query ?? {};
  switch (call.path) {
    case '/test_simple_prompt/prompt.md':
      return 'This is a simple prompt for testing.';
    case '/test_prompt_with_arguments/prompt.md':
      return `Prompt with arguments: arg1='${query.arg1}', arg2='${query.arg2}'`;
    case '/test_prompt_with_embedded_resource/prompt.md':
      return {
        messages: [
          {
            role: 'user',
            content: { type: 'resource', resource: { uri: query.resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } },
          },
          { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
        ],
      };
    case '/test_prompt_with_image/prompt.md':
      return {
        messages: [
          { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
          { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
        ],
      };
    default:
      return new ClientFailure({ code: 'not_found', message: `no ${call.path}` });
  }
}

const scratch: string[] = [];
afterAll(async () => {
  await stopAll();
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The built binary on 127.0.0.1, any free port; resolves with its HTTP URL once it listens. */
async function startBinary(): Promise<string> {
  const state = mkdtempSync(join(tmpdir(), 'mdp-conformance-state-'));
  scratch.push(state);
  const child = spawn(process.execPath, [CLI, '--host', '127.0.0.1', '--port', '0', '--cluster-mode', 'standalone', '--log-level', 'warn'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, XDG_STATE_HOME: state },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  track({ close: async () => (child.exitCode === null && child.signalCode === null ? (child.kill('SIGTERM'), await exited) : undefined) });
  let output = '';
  return new Promise((resolve, reject) => {
    const seen = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    void exited.then(() => reject(new Error(`mdp-server exited before listening:\n${output}`)));
  });
}

interface Check {
  readonly id: string;
  readonly status: string;
  readonly errorMessage?: string;
}

/** Run the suite's active server scenarios against `url`; each scenario's checks, by scenario. */
async function runSuite(url: string): Promise<{ scenarios: Map<string, Check[]>; output: string }> {
  const out = mkdtempSync(join(tmpdir(), 'mdp-conformance-results-'));
  scratch.push(out);
  const child = spawn(NODE_22, [SUITE, 'server', '--url', url, '--output-dir', out], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await new Promise<void>((resolve) => child.once('close', () => resolve()));
  // The suite's own summary (one line per scenario) is what a failure shows.
  const summary = output.indexOf('=== SUMMARY ===');
  if (summary !== -1) output = output.slice(summary);
  const scenarios = new Map<string, Check[]>();
  for (const entry of readdirSync(out)) {
    // server-<scenario>-<ISO time with dashes>
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry)?.[1];
    const file = join(out, entry, 'checks.json');
    if (scenario && existsSync(file)) scenarios.set(scenario, JSON.parse(readFileSync(file, 'utf8')) as Check[]);
  }
  return { scenarios, output };
}

const failuresOf = (checks: readonly Check[]): string[] =>
  checks.filter((check) => check.status === 'FAILURE').map((check) => `${check.id}: ${check.errorMessage ?? 'failed'}`);

describe.skipIf(!HAVE_SUITE)('the official MCP conformance suite against mdp-server over Streamable HTTP', () => {
  it('passes every server scenario that applies; every scenario the suite ran is classified', async () => {
    const http = await startBinary();
    const tools = await TestClient.register(http.replace(/^http/, 'ws'), TOOLS);
    tools.handler = toolAnswer;
    const prompts = await LoopTestClient.register(`${http}/mdp/http-loop`, PROMPTS);
    prompts.handler = promptAnswer;

    const { scenarios, output } = await runSuite(`${http}/mcp`);
    const ran = [...scenarios.keys()].sort();
    expect(
      ran.filter((name) => !APPLIES.includes(name) && !(name in NOT_APPLICABLE)),
      'scenarios neither applied nor explained',
    ).toEqual([]);
    const outcomes = Object.fromEntries(
      APPLIES.map((name) => {
        const checks = scenarios.get(name);
        return [name, checks === undefined ? ['did not run'] : checks.length === 0 ? ['no checks'] : failuresOf(checks)];
      }),
    );
    const expected = Object.fromEntries(APPLIES.map((name) => [name, []]));
    expect(outcomes, output).toEqual(expected);
    // The fixture scenarios reached the MDP clients (a "not found" tool error would pass tools-call-error).
    expect(new Set(tools.calls.map((call) => call.path))).toEqual(new Set(TOOLS.paths.map((path) => path.path)));
    expect(new Set(prompts.calls.map((call) => call.path))).toEqual(new Set(PROMPTS.paths.map((path) => path.path)));
  }, 90_000);
});
