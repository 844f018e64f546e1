/**
 * A tiny request/response protocol over the node IPC channel, used between the bench orchestrator
 * and every process it starts (mock clients, load generator, and the probe preloaded into servers).
 *
 *   parent ── {rpc, id, cmd, args} ──▶ child
 *   parent ◀── {rpc, id, ok, result | error} ── child
 */

export const RPC_TAG = 'mdp-bench';

export interface RpcRequest {
  readonly rpc: typeof RPC_TAG;
  readonly id: number;
  readonly cmd: string;
  readonly args?: unknown;
}

export type RpcReply =
  | { readonly rpc: typeof RPC_TAG; readonly id: number; readonly ok: true; readonly result: unknown }
  | { readonly rpc: typeof RPC_TAG; readonly id: number; readonly ok: false; readonly error: string };

// biome-ignore lint/suspicious/noExplicitAny: each handler declares its own arguments; the caller's side is typed.
export type RpcHandlers = Record<string, (args: any) => unknown>;

export function isRpcRequest(value: unknown): value is RpcRequest {
  return typeof value === 'object' && value !== null && (value as RpcRequest).rpc === RPC_TAG && typeof (value as RpcRequest).cmd === 'string';
}

/**
 * Answer RPC requests from the parent. When the parent goes away (the channel disconnects), call
 * `onOrphaned` — by default exit — so that no bench process outlives the run.
 */
export function serveRpc(handlers: RpcHandlers, onOrphaned: () => void = () => process.exit(0)): void {
  if (!process.send) throw new Error('serveRpc needs an IPC channel (spawn with stdio "ipc")');
  process.on('message', (message: unknown) => {
    if (!isRpcRequest(message)) return;
    const reply = (body: { ok: true; result: unknown } | { ok: false; error: string }): void => {
      if (process.connected) process.send?.({ rpc: RPC_TAG, id: message.id, ...body });
    };
    const handler = handlers[message.cmd];
    if (!handler) return reply({ ok: false, error: `unknown command ${message.cmd}` });
    Promise.resolve()
      .then(() => handler(message.args))
      .then(
        (result) => reply({ ok: true, result: result ?? null }),
        (error: unknown) => reply({ ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
      );
  });
  process.on('disconnect', onOrphaned);
}
