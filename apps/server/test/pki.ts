/**
 * Certificates for the TLS tests, made with `openssl` (Debian's, on the PATH) in a temporary
 * directory: a test CA and server certificates it issues for localhost, 127.0.0.1 and ::1 (good
 * for serving and, as cluster members do, for showing as a client certificate). Each test file
 * makes its own with `createPki()` and removes the directory with `remove()`.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate, createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MdpTlsOptions } from '../src/index.js';

/** A key and certificate in PEM files. */
export interface Issued {
  readonly keyFile: string;
  readonly certFile: string;
  readonly cert: Buffer;
}

export interface TestCa {
  readonly name: string;
  readonly caFile: string;
  readonly ca: Buffer;
  /** A server certificate from this CA, for localhost, 127.0.0.1 and ::1. */
  issue(name: string): Issued;
  /** Server options with `issued` and, unless `withCa` is false, this CA as --tls-ca. */
  tls(issued: Issued, withCa?: boolean): MdpTlsOptions;
}

export interface TestPki {
  readonly dir: string;
  /** A CA of its own in the same directory (e.g. for a node the cluster must refuse). */
  ca(name: string): TestCa;
  remove(): void;
}

// Extensions as browsers and OpenSSL want them: a CA that only signs, leaves for server and client use.
const CONFIG = `[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[leaf_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
`;

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

export function createPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'mdp-tls-'));
  const config = join(dir, 'openssl.cnf');
  writeFileSync(config, CONFIG);
  const file = (name: string): string => join(dir, name);
  return {
    dir,
    ca(caName) {
      const caFile = file(`${caName}.crt`);
      const caKey = file(`${caName}.key`);
      openssl([
        'req',
        '-x509',
        '-config',
        config,
        '-extensions',
        'ca_ext',
        ...EC_KEY,
        '-keyout',
        caKey,
        '-out',
        caFile,
        '-days',
        '2',
        '-subj',
        `/CN=MDP test CA ${caName}`,
      ]);
      const ca = readFileSync(caFile);
      const self: TestCa = {
        name: caName,
        caFile,
        ca,
        issue(name) {
          const keyFile = file(`${caName}-${name}.key`);
          const certFile = file(`${caName}-${name}.crt`);
          const csr = file(`${caName}-${name}.csr`);
          openssl(['req', '-new', '-config', config, ...EC_KEY, '-keyout', keyFile, '-out', csr, '-subj', `/CN=${name}`]);
          const serial = `0x${randomBytes(8).toString('hex')}`;
          openssl([
            'x509',
            '-req',
            '-in',
            csr,
            '-CA',
            caFile,
            '-CAkey',
            caKey,
            '-set_serial',
            serial,
            '-days',
            '2',
            '-extfile',
            config,
            '-extensions',
            'leaf_ext',
            '-out',
            certFile,
          ]);
          return { keyFile, certFile, cert: readFileSync(certFile) };
        },
        tls: (issued, withCa = true) => ({ keyFile: issued.keyFile, certFile: issued.certFile, ...(withCa ? { caFile } : {}) }),
      };
      return self;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** base64 of the SHA-256 of a certificate's public key (SPKI): what Chromium's pin list takes. */
export function spkiHash(pem: Buffer): string {
  const spki = new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(spki).digest('base64');
}
