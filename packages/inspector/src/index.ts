export { INSPECTOR_DEFAULTS, createInspector } from './inspector.js';
export type { Inspector, InspectorOptions } from './inspector.js';
export { INSPECTOR_CSP, INSPECTOR_PATH, inspectorAssets } from './assets.js';
export type { InspectorAsset } from './assets.js';
