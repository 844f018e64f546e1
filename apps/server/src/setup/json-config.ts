/**
 * Plans an edit of a JSON or JSONC config file with `jsonc-parser`'s edit API: only the bytes of
 * our entry change; the user's comments, key order, indentation and line endings stay as they are.
 *
 * jsonc-parser's own formatting of an edit widens to whole lines, which would reformat the user's
 * neighbouring entry too; so edits are made unformatted and then only the text we inserted is
 * formatted (or the object we inserted it into, when that object was empty).
 */
import {
  applyEdits,
  findNodeAtLocation,
  format,
  getNodeValue,
  modify,
  parseTree,
  printParseErrorCode,
  type FormattingOptions,
  type JSONPath,
  type Node,
  type ParseError,
} from 'jsonc-parser';
import {
  applyOwned,
  isBlank,
  isPlainObject,
  lineAndColumn,
  ownedChanges,
  type EditFailure,
  type EditRequest,
  type EditResult,
} from './config-edit.js';

export interface JsonDialect {
  /** JSONC (VS Code, Zed, …): comments and trailing commas are part of the format. */
  readonly comments: boolean;
}

export function editJsonConfig(request: EditRequest, dialect: JsonDialect): EditResult {
  const { key, name } = request;
  const source = isBlank(request.text) ? '' : request.text!;
  const errors: ParseError[] = [];
  const root = source === '' ? undefined : parseTree(source, errors, { allowTrailingComma: dialect.comments, disallowComments: !dialect.comments });
  const firstError = errors[0];
  if (firstError) return failure(source, firstError.offset, `${describeParseError(printParseErrorCode(firstError.error))}`);
  if (root && root.type !== 'object') return failure(source, root.offset, 'the top level is not an object');
  // A repeated key: the host reads the last one, an edit would land in the first.
  const repeated = root && (repeatedKey(root, key) ?? repeatedKey(findNodeAtLocation(root, [key]), name));
  if (repeated) return failure(source, repeated.offset, `"${repeated.name}" appears more than once in its object (the host reads only the last); keep one`);

  const container = root && findNodeAtLocation(root, [key]);
  if (container && container.type !== 'object') return failure(source, container.offset, `"${key}" is not an object`);
  const entryNode = container && findNodeAtLocation(container, [name]);
  if (entryNode && entryNode.type !== 'object') return failure(source, entryNode.offset, `"${key}"."${name}" is not an object`);
  const current = entryNode ? (getNodeValue(entryNode) as Record<string, unknown>) : undefined;

  const options = detectFormatting(source);
  const finish = (text: string): string => (request.text === undefined || isBlank(request.text) ? `${text}${options.eol}` : text);

  if (request.desired === undefined) {
    if (!current) return { ok: true, status: 'absent', text: request.text ?? '', changed: [], entry: undefined, previous: undefined };
    return { ok: true, status: 'removed', text: remove(source, [key, name], options), changed: [], entry: undefined, previous: current };
  }
  if (!current) {
    const text = finish(insert(source, [key, name], request.desired, options));
    return { ok: true, status: 'added', text, changed: [], entry: { ...request.desired }, previous: undefined };
  }
  const changes = ownedChanges(current, request.desired, request.owned);
  let text = source;
  for (const property of changes.unset) text = remove(text, [key, name, property], options);
  for (const [property, value] of changes.set) text = insert(text, [key, name, property], value, options);
  const changed = [...changes.unset, ...changes.set.map(([property]) => property)];
  if (changed.length === 0) return { ok: true, status: 'unchanged', text: request.text ?? '', changed, entry: current, previous: current };
  return { ok: true, status: 'updated', text, changed, entry: applyOwned(current, changes), previous: current };
}

/** The second property named `name` of `object`, when it has two. */
function repeatedKey(object: Node | undefined, name: string): { readonly name: string; readonly offset: number } | undefined {
  if (object?.type !== 'object') return undefined;
  const named = (object.children ?? []).filter((property) => property.children?.[0]?.value === name);
  const second = named[1];
  return second ? { name, offset: second.offset } : undefined;
}

/** Sets `path` to `value`, formatting only what was inserted. */
function insert(text: string, path: JSONPath, value: unknown, options: FormattingOptions): string {
  // The deepest object that already exists on the path: if it is empty, its braces get formatted too.
  const before = text === '' ? undefined : parseTree(text, [], { allowTrailingComma: true });
  const host = deepestObject(before, path);
  // New keys go first: a comment the user wrote after their last entry (`"docs": {…}, // docs`)
  // stays on that entry's line instead of ending up after ours.
  const edits = modify(text, path, value, { getInsertionIndex: () => 0 });
  let next = applyEdits(text, edits);
  const after = parseTree(next, [], { allowTrailingComma: true });
  let range: { offset: number; length: number } | undefined;
  if (!host) {
    range = after && { offset: after.offset, length: after.length };
  } else if (objectIsEmpty(host.node)) {
    const grown = after && findNodeAtLocation(after, host.path);
    range = grown && { offset: grown.offset, length: grown.length };
  } else {
    // From the object's brace to the end of what we inserted: puts our entry on its own lines
    // without touching the user's entries after it.
    const edit = edits[0];
    range = edit && { offset: host.node.offset, length: edit.offset + edit.content.length - host.node.offset };
  }
  if (range) next = applyEdits(next, format(next, range, options));
  return next;
}

/**
 * Removes the property at `path`. When it sits on lines of its own (as setup writes it), exactly
 * those lines go, so the comments and blank lines around it stay; otherwise jsonc-parser removes
 * it. An object this leaves empty is written as `{}`.
 */
function remove(text: string, path: JSONPath, options: FormattingOptions): string {
  const property = findNodeAtLocation(parseTree(text, [], { allowTrailingComma: true })!, path)?.parent;
  const lines = property && ownLines(text, property);
  let next = applyEdits(text, lines ? [{ ...lines, content: '' }] : modify(text, path, undefined, {}));
  const parent = findNodeAtLocation(parseTree(next, [], { allowTrailingComma: true })!, path.slice(0, -1));
  if (parent && parent.type === 'object' && objectIsEmpty(parent) && path.length > 1) {
    next = applyEdits(next, format(next, { offset: parent.offset, length: parent.length }, options));
  }
  return next;
}

/**
 * The lines a property takes up, when nothing else shares them: only indentation before it, and
 * after it at most a comma before the line break. A property that is its object's last (no comma
 * after it) does not qualify: the comma to remove is then the one before it, and jsonc-parser
 * knows how to do that.
 */
function ownLines(text: string, property: Node): { offset: number; length: number } | undefined {
  const start = text.lastIndexOf('\n', property.offset - 1) + 1;
  if (!/^[ \t]*$/.test(text.slice(start, property.offset))) return undefined;
  let end = property.offset + property.length;
  const skipBlanks = (): void => {
    while (text[end] === ' ' || text[end] === '\t') end++;
  };
  skipBlanks();
  if (text[end] !== ',') return undefined;
  end++;
  skipBlanks();
  if (text.startsWith('\r\n', end)) end += 2;
  else if (text[end] === '\n') end += 1;
  else return undefined;
  return { offset: start, length: end - start };
}

function deepestObject(root: Node | undefined, path: JSONPath): { node: Node; path: JSONPath } | undefined {
  if (!root || root.type !== 'object') return undefined;
  let found = { node: root, path: [] as JSONPath };
  for (let depth = 1; depth < path.length; depth++) {
    const node = findNodeAtLocation(root, path.slice(0, depth));
    if (!node || node.type !== 'object') break;
    found = { node, path: path.slice(0, depth) };
  }
  return found;
}

const objectIsEmpty = (node: Node): boolean => (node.children?.length ?? 0) === 0;

/** The file's own indentation and line ending, so inserted text looks like the rest. */
export function detectFormatting(text: string): FormattingOptions {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const indent = /^([ \t]+)\S/m.exec(text)?.[1];
  if (indent === undefined) return { tabSize: 2, insertSpaces: true, eol };
  if (indent.startsWith('\t')) return { tabSize: 4, insertSpaces: false, eol };
  return { tabSize: indent.length, insertSpaces: true, eol };
}

function failure(text: string, offset: number, message: string): EditFailure {
  return { ok: false, message, ...lineAndColumn(text, offset) };
}

/** jsonc-parser names errors in CamelCase ("CommaExpected"); say them as words. */
function describeParseError(code: string): string {
  if (code === 'InvalidCommentToken') return 'comments are not allowed in this file';
  return code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}
