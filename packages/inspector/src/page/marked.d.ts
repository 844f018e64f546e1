// The server serves marked's browser build at /mdp/inspector/marked.js; its types are the package's.
export { marked } from 'marked';
