/** The MCP settings of `mdp-server` and `mdp-server mcp` (SPEC §13): a group of the settings table. */
import { MAX_TIMER_MS } from '@mdp/core';
import { CATALOG_DEFAULTS, DEFAULT_MAX_CONTENT_BYTES, GENERIC_TOOL_NAMES, MCP_TASK_DEFAULTS, SURFACES } from '@mdp/mcp-bridge/lite';
import type { MdpMcpOptions } from '../features/mcp-http.js';
import { list, oneOf, wholeNumber } from './values.js';
import { settingGroup } from './table.js';

export const MCP_SETTINGS = settingGroup({
  title: 'MCP (agents: Streamable HTTP at /mcp; stdio with "mdp-server mcp")',
  settings: {
    mcpSurface: {
      flag: 'mcp-surface',
      placeholder: '<mode>',
      schema: oneOf(SURFACES),
      default: CATALOG_DEFAULTS.surface,
      help: `${SURFACES.join(' | ')}: catalog lists every endpoint as a tool, every prompt as a prompt and every
        skill as a resource, besides the four generic tools (listClients, listPaths, callPath, callPaths)`,
    },
    mcpMaxTools: {
      flag: 'mcp-max-tools',
      placeholder: '<n>',
      schema: wholeNumber(GENERIC_TOOL_NAMES.length, 10_000),
      default: CATALOG_DEFAULTS.maxTools,
      help: 'most tools listed, the generic ones included; past it the generic tools still reach every path',
    },
    mcpMaxContentBytes: {
      flag: 'mcp-max-content-bytes',
      placeholder: '<n>',
      schema: wholeNumber(1024, 1024 * 1024 * 1024),
      default: DEFAULT_MAX_CONTENT_BYTES,
      help: `most bytes of text and decoded data in one result an agent sees as MCP content (an image, audio, a
        client's content blocks) or in one binary skill read; past it the agent gets a too_large error, never a cut image`,
    },
    mcpTaskTimeoutMs: {
      flag: 'mcp-task-timeout-ms',
      placeholder: '<ms>',
      schema: wholeNumber(1, MAX_TIMER_MS),
      default: MCP_TASK_DEFAULTS.timeoutMs,
      help: `time a client has to answer a call an agent made as an MCP task (callPath or a catalog tool called with
        "task", then polled with tasks/get), never less than --invocation-timeout-ms; a session holds at most
        ${MCP_TASK_DEFAULTS.maxPerSession} tasks, a principal ${MCP_TASK_DEFAULTS.maxPerPrincipal}`,
    },
    mcpInclude: {
      flag: 'mcp-include',
      placeholder: '<glob>',
      arity: 'list',
      schema: list('globs'),
      help: 'list only catalog items whose name or <clientId><path> matches (repeatable; * matches anything, ? one character)',
    },
    mcpExclude: { flag: 'mcp-exclude', placeholder: '<glob>', arity: 'list', schema: list('globs'), help: 'leave out catalog items that match (repeatable)' },
  },
});

/** The MCP options of the settings' values. */
export function mcpOptions(values: {
  readonly mcpSurface: MdpMcpOptions['surface'];
  readonly mcpMaxTools: number;
  readonly mcpMaxContentBytes: number;
  readonly mcpTaskTimeoutMs: number;
  readonly invocationTimeoutMs: number;
  readonly mcpInclude?: readonly string[] | undefined;
  readonly mcpExclude?: readonly string[] | undefined;
}): MdpMcpOptions {
  return {
    surface: values.mcpSurface,
    maxTools: values.mcpMaxTools,
    maxContentBytes: values.mcpMaxContentBytes,
    // A task is for a call longer than a plain one may take.
    taskTimeoutMs: Math.max(values.mcpTaskTimeoutMs, values.invocationTimeoutMs),
    ...(values.mcpInclude ? { include: values.mcpInclude } : {}),
    ...(values.mcpExclude ? { exclude: values.mcpExclude } : {}),
  };
}
