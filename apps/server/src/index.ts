export { createMdpServer } from './server.js';
export type { ListeningInfo, MdpServer } from './server.js';
export { COOKIE_SAME_SITE, SERVER_DEFAULTS } from './options.js';
export type { CookieSameSite, MdpServerOptions } from './options.js';
export { TlsFileError } from './tls.js';
export type { MdpTlsOptions, ReloadResult } from './tls.js';
export { HELP, parseCliArgs, parseTokensFile } from './cli-args.js';
export type { CliCommand } from './cli-args.js';
export type { MdpClusterOptions } from './cluster.js';
