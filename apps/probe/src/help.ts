/** The `--help` text. Kept beside the code it describes; tests hold it to the real defaults. */
export const HELP = `Usage: mdp-probe [options] [URL | PORT | HOST:PORT]...

Ask each target for its MDP metadata document (GET /mdp/meta, Accept: application/json),
validate it and print a summary: protocol and accepted versions, server id, endpoints,
features, cluster id, membership, role, term, leader, lease, members and quorum.

Targets (none given and no --scan: 127.0.0.1:47372):
  URL                   http://, https://, ws:// or wss:// address of the server; a trailing
                        /mdp/meta, /mdp/cluster, /mdp/http-loop or /mdp/auth is dropped
  PORT                  a port on 127.0.0.1
  HOST:PORT             a host and port; IPv6 as [::1]:47372
  HOST                  a host on port 47372

Options:
  --scan [HOST:FROM-TO] probe every port from FROM to TO on HOST, concurrently; HOST may be
                        left out (127.0.0.1); a bare --scan means 127.0.0.1:47372-47471.
                        Ports where nothing answers are counted, not listed. Repeatable.
  --require-version V   V (a semver version, e.g. 2.0.0) must satisfy one of the server's
                        supportedProtocolRanges
  --cluster-id ID       the server must belong to cluster ID
  --timeout MS          time allowed for each probe, in milliseconds (default 1000)
  --tls-ca FILE         trust the CA certificates (PEM) in FILE for https:// and wss:// targets
                        (default: node's trusted CAs); targets without a scheme and --scan
                        ranges are then probed over https
  --insecure            accept any certificate, as with --tls-ca, without checking it
  --json                print {exitCode, servers, failures, scans} as JSON instead of text;
                        servers[].meta is the validated metadata document
  -h, --help            print this help and exit
  -v, --version         print the version and exit

An answer that is not MDP (an HTML page, an HTTP error, invalid JSON, a document that fails
the schema) is reported as "not MDP: <reason>"; a closed port or time-out as "unreachable".

Exit status:
  0   an MDP server answered, and every MDP server that answered meets
      --require-version and --cluster-id
  1   no MDP server answered
  2   an MDP server answered but fails --require-version or --cluster-id
  64  usage error (unknown option, bad port, bad range, bad version, bad --tls-ca file)
`;
