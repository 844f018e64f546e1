/**
 * Plans an edit of a JSON or JSONC config file with `jsonc-parser`'s edit API: only the bytes of
 * our entry change; the user's comments, key order, indentation and line endings stay as they are.
 *
 * jsonc-parser's own formatting of an edit widens to whole lines, which would reformat the user's
 * neighbouring entry too; so edits are made unformatted and then only the text we inserted is
 * formatted (or the object we inserted it into, when that object was empty). The new text is
 * parsed back and must hold exactly the intended document before it is offered.
 */
import {
  applyEdits,
  findNodeAtLocation,
  format,
  getNodeValue,
  modify,
  parse,
  parseTree,
  printParseErrorCode,
  type FormattingOptions,
  type JSONPath,
  type Node,
  type ParseError,
  visit,
} from 'jsonc-parser';
import {
  applyOwned,
  deepEqual,
  isBlank,
  isPlainObject,
  lineAndColumn,
  ownedChanges,
  type EditFailure,
  type EditPlan,
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

  // What the file must hold after the edit, checked by parsing the new text back.
  const checked = (plan: EditPlan): EditResult => verify(plan, dialect, root ? getNodeValue(root) : {}, key, name) ?? plan;

  if (request.desired === undefined) {
    if (!current) return { ok: true, status: 'absent', text: request.text ?? '', changed: [], entry: undefined, previous: undefined };
    return checked({ ok: true, status: 'removed', text: remove(source, [key, name], options), changed: [], entry: undefined, previous: current });
  }
  if (!current) {
    const text = finish(insert(source, [key, name], request.desired, options));
    return checked({ ok: true, status: 'added', text, changed: [], entry: { ...request.desired }, previous: undefined });
  }
  const changes = ownedChanges(current, request.desired, request.owned);
  let text = source;
  for (const property of changes.unset) text = remove(text, [key, name, property], options);
  for (const [property, value] of changes.set) text = insert(text, [key, name, property], value, options);
  const changed = [...changes.unset, ...changes.set.map(([property]) => property)];
  if (changed.length === 0) return { ok: true, status: 'unchanged', text: request.text ?? '', changed, entry: current, previous: current };
  return checked({ ok: true, status: 'updated', text, changed, entry: applyOwned(current, changes), previous: current });
}

/**
 * The edited text must parse in the file's dialect and hold the document it started from with
 * our change and nothing else (a servers object left empty and none count as the same). Anything
 * else is a surprise of the edit library: the user's file is left untouched.
 */
function verify(plan: EditPlan, dialect: JsonDialect, before: unknown, key: string, name: string): EditFailure | undefined {
  const errors: ParseError[] = [];
  const after: unknown = parse(plan.text, errors, { allowTrailingComma: dialect.comments, disallowComments: !dialect.comments });
  if (errors.length > 0) return { ok: false, message: 'cannot edit it safely (the edited text does not parse)' };
  const document = isPlainObject(before) ? before : {};
  const servers = { ...(isPlainObject(document[key]) ? document[key] : {}) };
  if (plan.entry) servers[name] = plan.entry;
  else delete servers[name];
  const wanted = { ...document, [key]: servers };
  const withoutEmpty = (value: unknown): unknown => {
    if (!isPlainObject(value) || !isPlainObject(value[key]) || Object.keys(value[key]).length > 0) return value;
    const rest = { ...value };
    delete rest[key];
    return rest;
  };
  if (!deepEqual(withoutEmpty(after), withoutEmpty(wanted)))
    return { ok: false, message: 'cannot edit it safely (the edited text does not hold the expected document)' };
  return undefined;
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
 * those lines go (with the comma before it when it is the last), so the comments and blank lines
 * around it stay; otherwise jsonc-parser removes it.
 *
 * The servers object this leaves empty goes too: setup created it in a file that had none, so add
 * then remove gives back the file it started from (a file that had an empty one loses only that,
 * which every host reads the same). One that holds or carries a comment is the user's and stays,
 * as `{}` or with its comments. A file left with nothing in it is `{}`, as it was before setup.
 */
function remove(text: string, path: JSONPath, options: FormattingOptions): string {
  const property = findNodeAtLocation(parseTree(text, [], { allowTrailingComma: true })!, path)?.parent;
  const lines = property && ownLines(text, property);
  let next = applyEdits(text, lines ?? modify(text, path, undefined, {}));
  const parent = findNodeAtLocation(parseTree(next, [], { allowTrailingComma: true })!, path.slice(0, -1));
  if (parent && parent.type === 'object' && objectIsEmpty(parent)) {
    const container = parent.parent;
    if (path.length === 2 && container && !hasComment(next, container.offset, lineEnd(next, container.offset + container.length))) {
      return remove(next, path.slice(0, 1), options);
    }
    if (!hasComment(next, parent.offset, parent.offset + parent.length)) {
      next = applyEdits(next, format(next, { offset: parent.offset, length: parent.length }, options));
    }
  }
  return next;
}

/**
 * The edits that take out a property that has its lines to itself: only indentation before it,
 * and after it at most a comma and a `//` comment (its own) before the line break. When it is its
 * object's last (no comma after it), the comma after the property before it goes too, and nothing
 * else of that line (a comment there is the user's).
 */
function ownLines(text: string, property: Node): Array<{ offset: number; length: number; content: string }> | undefined {
  const start = text.lastIndexOf('\n', property.offset - 1) + 1;
  if (!/^[ \t]*$/.test(text.slice(start, property.offset))) return undefined;
  let end = property.offset + property.length;
  const skipBlanks = (): void => {
    while (text[end] === ' ' || text[end] === '\t') end++;
  };
  skipBlanks();
  const last = text[end] !== ',';
  if (!last) {
    end++;
    skipBlanks();
  }
  if (text.startsWith('//', end)) end = lineEnd(text, end);
  if (text.startsWith('\r\n', end)) end += 2;
  else if (text[end] === '\n') end += 1;
  else return undefined;
  const edits = [{ offset: start, length: end - start, content: '' }];
  const siblings = property.parent?.children ?? [];
  const before = siblings[siblings.indexOf(property) - 1];
  if (last && before) {
    let comma = before.offset + before.length;
    while (text[comma] === ' ' || text[comma] === '\t') comma++;
    if (text[comma] !== ',') return undefined;
    edits.push({ offset: comma, length: 1, content: '' });
  }
  return edits;
}

/** The offset of the line break (or the end of the text) at or after `offset`. */
function lineEnd(text: string, offset: number): number {
  const newline = text.indexOf('\n', offset);
  if (newline === -1) return text.length;
  return newline > 0 && text[newline - 1] === '\r' ? newline - 1 : newline;
}

/** Whether a comment starts between `start` and `end`. */
function hasComment(text: string, start: number, end: number): boolean {
  let found = false;
  visit(text, { onComment: (offset) => void (found ||= offset >= start && offset < end) }, { allowTrailingComma: true });
  return found;
}

function deepestObject(root: Node | undefined, path: JSONPath): { node: Node; path: JSONPath } | undefined {
  if (root?.type !== 'object') return undefined;
  let found = { node: root, path: [] as JSONPath };
  for (let depth = 1; depth < path.length; depth++) {
    const node = findNodeAtLocation(root, path.slice(0, depth));
    if (node?.type !== 'object') break;
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
