export { DEFAULT_SKILL_CONTENT_TYPE, handleSkillRead, skillContentType } from './handler.js';
export type { SkillReadOptions, SkillReadRequest, SkillReadResponse } from './handler.js';
export { isSkillRoutePath, parseSkillRoute, skillPathCandidates } from './route.js';
export type { SkillRoute } from './route.js';
export { createSkillsRoutes, lastValueQuery } from './routes.js';
export type { SkillsRoutesOptions } from './routes.js';
export { createNodeSkillsHandler, joinedHeaders } from './node.js';
export type { NodeSkillsOptions } from './node.js';
