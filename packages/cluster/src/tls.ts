/**
 * TLS of the connections a node opens itself (SPEC §14): discovery and upstream probes of
 * `/mdp/meta`, control links and mirrors. Peers are verified against `ca` (node's trusted CAs
 * without one); `cert` and `key` are shown to a peer whose listener asks for a client certificate,
 * as a cluster whose members share a CA does (mutual TLS on `/mdp/cluster`).
 */
import type { ConnectionOptions } from 'node:tls';

export interface PeerTls {
  /** CA certificates (PEM, one or more) a peer's certificate must chain to. Default: node's trusted CAs. */
  readonly ca?: string | Buffer;
  /** This server's certificate chain and key (PEM), for a peer that asks for a client certificate. */
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  /** Refuse a peer whose certificate does not verify. Default true; `false` only to look (`mdp-probe --insecure`). */
  readonly rejectUnauthorized?: boolean;
}

/** The TLS options in force; a function when they can change (certificates re-read on SIGHUP). */
export type PeerTlsSource = PeerTls | (() => PeerTls);

export function currentTls(source: PeerTlsSource): PeerTls {
  return typeof source === 'function' ? source() : source;
}

/** The options node's TLS client (and `ws`, which passes them on) takes for `tls`. */
export function tlsConnectOptions(tls: PeerTls): ConnectionOptions {
  const options: ConnectionOptions = {};
  if (tls.ca !== undefined) options.ca = tls.ca;
  if (tls.cert !== undefined && tls.key !== undefined) {
    options.cert = tls.cert;
    options.key = tls.key;
  }
  if (tls.rejectUnauthorized === false) options.rejectUnauthorized = false;
  return options;
}

/** The TLS options of a websocket a node dials (none for a node without TLS). */
export function dialTls(source: PeerTlsSource | undefined): ConnectionOptions {
  return source === undefined ? {} : tlsConnectOptions(currentTls(source));
}
