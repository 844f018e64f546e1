export { HOST_API_DEFAULTS, HOST_ROUTES, createHostHandler } from './handler.js';
export type { HostApiOptions, HostHandler, HostHttpRequest, HostHttpResponse } from './handler.js';
export { createNodeHostHandler } from './node.js';
export type { NodeHostOptions } from './node.js';
