export {
  DEFAULT_SKILL_CONTENT_TYPE,
  MDP_CLIENT_CANDIDATES_HEADER,
  MDP_ERROR_CODE_HEADER,
  MDP_ERROR_HEADER,
  SKILL_TEXT_HEADERS,
  handleSkillRead,
  readSkill,
  skillContentType,
} from './handler.js';
export type { SkillMiss, SkillMissCode, SkillReadOptions, SkillReadRequest, SkillReadResponse } from './handler.js';
export { isSkillRoutePath, lastValueQuery, originForm, parseSkillRoute, rawSkillRoute } from './route.js';
export type { RawSkillRoute, SkillRoute } from './route.js';
/** The candidate rule lives in @mdp/protocol; re-exported here where callers first looked. */
export { skillPathCandidates } from '@mdp/protocol';
export { createNodeSkillsHandler } from './node.js';
export type { NodeSkillsOptions } from './node.js';
