export { INSPECTOR_DEFAULTS, createInspector } from './inspector.js';
export type { Inspector, InspectorOptions } from './inspector.js';
export { INSPECTOR_CSP, INSPECTOR_PATH } from './assets.js';
