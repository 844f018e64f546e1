/**
 * TLS of the listener (SPEC §14): the key, certificate and CA files of `--tls-key`, `--tls-cert`
 * and `--tls-ca`, read and checked before anything listens, and read again on reload (SIGHUP)
 * without dropping a connection:
 *
 *   files ──read + check──▶ material ──▶ HTTPS listener (setSecureContext on reload)
 *                                    └──▶ cluster dialers (read at every dial)
 *
 * A reload that finds a bad file keeps the material in force.
 */
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ServerOptions } from 'node:https';
import { createSecureContext } from 'node:tls';
import type { PeerTls } from '@mdp/cluster';
import type { Logger } from '@mdp/core';
import { readProblem } from './settings/sources.js';

export interface MdpTlsOptions {
  /** Private key (PEM, not encrypted). */
  readonly keyFile: string;
  /** The server's certificate (PEM), followed by any intermediate certificates. */
  readonly certFile: string;
  /**
   * CA certificates (PEM) of the cluster: this server's probes, links and mirrors trust only
   * certificates from them. Default: node's trusted CAs.
   */
  readonly caFile?: string;
  /**
   * Verify cluster peers the other way too: the listener asks every connection for a client
   * certificate (those without one go on without) and `/mdp/cluster` takes only peers showing one
   * from `caFile`. Needs `caFile`. Default false: Chromium cancels a websocket whose connection is
   * asked for a client certificate it has no answer for, so a page that opens the websocket first
   * could not connect.
   */
  readonly peerCertificates?: boolean;
}

export const PEER_CERTIFICATES_NEED_CA = 'peer certificates need a CA file: peers show client certificates from that CA';

/** A TLS file that cannot be used; the message names the file. */
export class TlsFileError extends Error {
  readonly code = 'tls_file';

  constructor(
    readonly file: string,
    message: string,
  ) {
    super(message);
    this.name = 'TlsFileError';
  }
}

/** What the files hold, checked: key and certificate belong together, every PEM block parses. */
export interface TlsMaterial {
  readonly key: Buffer;
  readonly cert: Buffer;
  readonly ca: Buffer | undefined;
  /** The server certificate's subject and expiry, for the logs. */
  readonly subject: string;
  readonly validTo: string;
}

export type ReadBytes = (path: string) => Buffer;

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function readFile(read: ReadBytes, path: string, what: string): Buffer {
  try {
    return read(path);
  } catch (error) {
    throw new TlsFileError(path, `cannot read the TLS ${what} ${path}: ${readProblem(error)}`);
  }
}

/** Every certificate of a PEM file, the first one first; at least one. */
function certificatesOf(pem: Buffer, path: string, what: string): X509Certificate[] {
  const blocks = pem.toString('utf8').match(CERTIFICATE_BLOCK) ?? [];
  if (blocks.length === 0) throw new TlsFileError(path, `the TLS ${what} ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (error) {
      throw new TlsFileError(path, `the TLS ${what} ${path} holds a broken certificate (number ${i + 1}): ${(error as Error).message}`);
    }
  });
}

/** Read and check the files. @throws TlsFileError naming the file at fault. */
export function readTlsFiles(options: MdpTlsOptions, read: ReadBytes = readFileSync): TlsMaterial {
  const { keyFile, certFile, caFile } = options;
  const key = readFile(read, keyFile, 'key');
  let keyObject: KeyObject;
  try {
    keyObject = createPrivateKey(key);
  } catch (error) {
    throw new TlsFileError(keyFile, `the TLS key ${keyFile} is not a usable PEM private key: ${(error as Error).message}`);
  }
  const cert = readFile(read, certFile, 'certificate');
  const [leaf] = certificatesOf(cert, certFile, 'certificate');
  if (!leaf!.checkPrivateKey(keyObject)) {
    throw new TlsFileError(keyFile, `the TLS key ${keyFile} does not match the certificate in ${certFile}`);
  }
  const ca = caFile === undefined ? undefined : readFile(read, caFile, 'CA file');
  if (ca && caFile) certificatesOf(ca, caFile, 'CA file');
  try {
    // Whatever else OpenSSL objects to (a key too weak for its security level, …), now rather than at the first handshake.
    createSecureContext({ key, cert, ...(ca ? { ca } : {}) });
  } catch (error) {
    throw new TlsFileError(certFile, `cannot use the TLS certificate ${certFile} with the key ${keyFile}: ${(error as Error).message}`);
  }
  return { key, cert, ca, subject: leaf!.subject.replace(/\n/g, ', '), validTo: leaf!.validTo };
}

/**
 * The options of the HTTPS listener. With `peerCertificates` it asks every connection for a client
 * certificate but lets those without one in (`rejectUnauthorized: false`): only `/mdp/cluster`
 * insists.
 */
export function listenerTlsOptions(material: TlsMaterial, peerCertificates = false): ServerOptions {
  return {
    key: material.key,
    cert: material.cert,
    ...(material.ca ? { ca: material.ca } : {}),
    ...(peerCertificates ? { requestCert: true, rejectUnauthorized: false } : {}),
  };
}

/** What the cluster dials with: verify against the CA, show our certificate to a peer that asks. */
export function peerTlsOf(material: TlsMaterial): PeerTls {
  return { key: material.key, cert: material.cert, ...(material.ca ? { ca: material.ca } : {}) };
}

/** The listener's certificate can be replaced while it serves. */
export interface SecureListener {
  setSecureContext(options: ServerOptions): void;
}

export type ReloadResult = { readonly ok: true; readonly material: TlsMaterial } | { readonly ok: false; readonly error: string };

/** The TLS material in force, and its reload. */
export class TlsState {
  private material: TlsMaterial;

  /** @throws RangeError for `peerCertificates` without a CA, TlsFileError for a file it cannot use */
  constructor(
    readonly options: MdpTlsOptions,
    private readonly logger: Logger,
    private readonly read: ReadBytes = readFileSync,
  ) {
    if (options.peerCertificates && options.caFile === undefined) throw new RangeError(PEER_CERTIFICATES_NEED_CA);
    this.material = readTlsFiles(options, read);
  }

  get current(): TlsMaterial {
    return this.material;
  }

  /** Whether cluster peers must show a client certificate from the CA. */
  get verifiesPeers(): boolean {
    return this.options.peerCertificates === true;
  }

  /** The listener's options for the material in force. */
  listenerOptions(material: TlsMaterial = this.material): ServerOptions {
    return listenerTlsOptions(material, this.verifiesPeers);
  }

  /**
   * Read the files again and hand them to `listener`: new connections get the new certificate,
   * open ones keep theirs. A bad file keeps what is in force, and says why.
   */
  reload(listener: SecureListener): ReloadResult {
    let next: TlsMaterial;
    try {
      next = readTlsFiles(this.options, this.read);
      listener.setSecureContext(this.listenerOptions(next));
    } catch (error) {
      const message = error instanceof TlsFileError ? error.message : `cannot use the TLS files: ${(error as Error).message}`;
      this.logger.error('tls.reload_failed', { message, kept: { subject: this.material.subject, validTo: this.material.validTo } });
      return { ok: false, error: message };
    }
    this.material = next;
    this.logger.info('tls.reloaded', { certFile: this.options.certFile, subject: next.subject, validTo: next.validTo });
    return { ok: true, material: next };
  }
}
