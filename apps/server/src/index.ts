export { createMdpServer } from './server.js';
export type { ListeningInfo, MdpServer } from './server.js';
export { SERVER_DEFAULTS } from './options.js';
export type { MdpServerOptions } from './options.js';
export { HELP, parseCliArgs, parseTokensFile } from './cli-args.js';
export type { CliCommand } from './cli-args.js';
export type { MdpClusterOptions } from './cluster.js';
