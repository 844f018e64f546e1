export { HOST_API_DEFAULTS, createHostRoutes } from './routes.js';
export type { HostRoutesOptions } from './routes.js';
