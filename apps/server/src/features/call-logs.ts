/**
 * The access log (a `call` info line per skill read, host call, MCP call and cluster call) and the
 * audit log (SPEC §15: one JSON line per call to a file or stdout). Both are off by default and
 * read the call-end observer; neither ever writes a token.
 */
import { createWriteStream, openSync, type WriteStream } from 'node:fs';
import type { ServerContext, ServerFeature } from '../feature.js';
import { auditLine, createTokenHasher, outcomeOf } from '../audit.js';

export interface CallLogsOptions {
  readonly accessLog: boolean;
  /** A file path (appended to), `-` for stdout, or a function given each line. */
  readonly auditLog: string | ((line: string) => void) | undefined;
}

export function callLogsFeature(ctx: ServerContext, options: CallLogsOptions): ServerFeature {
  if (options.accessLog) {
    ctx.observeCalls((record) =>
      ctx.logger.info('call', {
        route: record.route,
        clientId: record.clientId,
        method: record.method,
        path: record.path,
        outcome: outcomeOf(record),
        durationMs: Math.round(record.durationMs * 10) / 10,
      }),
    );
  }
  const target = options.auditLog;
  if (target === undefined) return { name: 'call-logs' };

  const hash = createTokenHasher();
  let stream: WriteStream | undefined;
  let write: ((line: string) => void) | undefined = typeof target === 'function' ? target : undefined;
  ctx.observeCalls((record) => write?.(auditLine(record, new Date(), hash)));
  return {
    name: 'call-logs',
    start() {
      if (write) return;
      if (target === '-') {
        write = (line) => process.stdout.write(`${line}\n`);
        return;
      }
      // Opened here, synchronously: a path that cannot be written stops the server from starting.
      const file = createWriteStream(target as string, { fd: openSync(target as string, 'a') });
      file.on('error', (error) => ctx.logger.error('audit_log.write_failed', { path: target, error }));
      stream = file;
      write = (line) => file.write(`${line}\n`);
    },
    async close() {
      write = undefined;
      const file = stream;
      stream = undefined;
      if (file) await new Promise<void>((resolve) => file.end(() => resolve()));
    },
  };
}
