/**
 * The TLS settings of `mdp-server` (SPEC §14, the reference server's `--tls-key`, `--tls-cert`,
 * `--tls-ca`) and the cookie's `SameSite`, turned into MdpServerOptions. The files are only named
 * here; the server reads them (a file it cannot use stops it with exit status 1, not 64).
 */
import { oneOf, text, toggle } from './values.js';
import { COOKIE_SAME_SITE, SERVER_DEFAULTS, type CookieSameSite } from './options.js';
import { settingGroup, sourceLabel, type Source, type ValuesOf } from './table.js';
import type { MdpTlsOptions } from '../tls.js';

export const TLS_SETTINGS = settingGroup({
  title: 'TLS, and browser pages of other sites',
  settings: {
    tlsKey: {
      flag: 'tls-key',
      placeholder: '<file>',
      schema: text(),
      help: 'private key (PEM) of --tls-cert: serve HTTPS and WSS on the port, and /mdp/meta advertises https and wss',
    },
    tlsCert: { flag: 'tls-cert', placeholder: '<file>', schema: text(), help: 'certificate (PEM; intermediates after it) for --tls-key' },
    tlsCa: {
      flag: 'tls-ca',
      placeholder: '<file>',
      schema: text(),
      defaultText: "node's trusted CAs",
      help: 'CA certificates (PEM) of the cluster: the peers this server probes and dials must have a certificate from them',
    },
    tlsPeerCerts: {
      flag: 'tls-peer-certs',
      arity: 'switch',
      schema: toggle(),
      default: false,
      help: `/mdp/cluster takes only peers showing a client certificate from --tls-ca. The
        listener then asks every connection for one; Chromium cancels a websocket so asked
        before any other request to the server`,
    },
    cookieSameSite: {
      flag: 'cookie-same-site',
      placeholder: '<mode>',
      schema: oneOf(COOKIE_SAME_SITE),
      default: SERVER_DEFAULTS.cookieSameSite,
      help: `${COOKIE_SAME_SITE.join(' | ')}: SameSite of the mdp_auth cookie. none lets the
        browser send it from pages of other sites and needs TLS; over TLS every cookie is
        Secure. Whatever the mode, the cookie counts only from this server's own pages,
        loopback pages and --allow-origin origins`,
    },
  },
  notes: '  The certificate files are read again on SIGHUP: new connections get them, open ones stay.',
});

export type TlsValues = ValuesOf<typeof TLS_SETTINGS.settings>;

export type TlsSettings =
  | { readonly ok: true; readonly tls: MdpTlsOptions | undefined; readonly cookieSameSite: CookieSameSite }
  | { readonly ok: false; readonly messages: readonly string[] };

/** The TLS files and the cookie's SameSite, or why the settings do not go together. */
export function tlsSettings(values: TlsValues, sources: Readonly<Record<string, Source>>): TlsSettings {
  const label = (key: keyof TlsValues): string => sourceLabel(sources[key] ?? { kind: 'default' }, TLS_SETTINGS.settings[key]);
  const { tlsKey, tlsCert, tlsCa, tlsPeerCerts, cookieSameSite } = values;
  const messages: string[] = [];
  if (tlsKey !== undefined && tlsCert === undefined) messages.push(`${label('tlsKey')} needs --tls-cert too: TLS takes a key and its certificate`);
  if (tlsCert !== undefined && tlsKey === undefined) messages.push(`${label('tlsCert')} needs --tls-key too: TLS takes a key and its certificate`);
  const tls = tlsKey !== undefined && tlsCert !== undefined;
  if (tlsCa !== undefined && tlsKey === undefined && tlsCert === undefined) {
    messages.push(`${label('tlsCa')} needs --tls-key and --tls-cert: the CA is that of a server on TLS`);
  }
  if (tlsPeerCerts && tlsCa === undefined) messages.push(`${label('tlsPeerCerts')} needs --tls-ca: peers show client certificates from that CA`);
  if (cookieSameSite === 'none' && !tls && messages.length === 0) {
    messages.push(
      `${label('cookieSameSite')} none needs TLS (--tls-key and --tls-cert): browsers keep a SameSite=None cookie only when it is Secure, and a Secure cookie only comes over HTTPS`,
    );
  }
  if (messages.length > 0) return { ok: false, messages };
  return {
    ok: true,
    tls: tls
      ? { keyFile: tlsKey, certFile: tlsCert, ...(tlsCa !== undefined ? { caFile: tlsCa } : {}), ...(tlsPeerCerts ? { peerCertificates: true } : {}) }
      : undefined,
    cookieSameSite,
  };
}
