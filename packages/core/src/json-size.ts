/**
 * The size of a value as `JSON.stringify` writes it, without writing it: its length in characters
 * (UTF-16 code units, what `.length` of the JSON text says) and in bytes (UTF-8, what travels and
 * is stored). One pass that builds no string, for the byte caps on catalogs (catalog-limits.ts).
 * For plain JSON data (what JSON.parse and valibot hand over): `toJSON` methods are not called.
 */

/**
 * Deepest nesting looked into, levels. No edge takes JSON deeper than MAX_JSON_DEPTH (64); an
 * embedder's own session may register anything, and the meter must not overflow the stack on it
 * (nor loop on a cycle): what lies deeper counts as empty.
 */
export const DEEPEST_MEASURED = 1000;

/** Characters that `JSON.stringify` escapes (`"`, `\`, control characters) or may (surrogates). */
const NEEDS_CARE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * A running measure. {@link add} adds the JSON of a value and stops descending once `chars` passes
 * `stopChars` or `bytes` passes `stopBytes`: past a limit the exact figure does not matter, and a
 * value far larger than any limit costs no more to refuse than one just over it.
 */
export class JsonMeter {
  chars = 0;
  bytes = 0;
  /** Containers open around the value being measured. */
  private depth = 0;

  constructor(
    public stopChars = Infinity,
    public stopBytes = Infinity,
  ) {}

  /** Whether a stop was passed (the figures are then lower bounds). */
  get stopped(): boolean {
    return this.chars > this.stopChars || this.bytes > this.stopBytes;
  }

  /** Add the JSON of `value`, as an array element or a top-level value (`undefined` counts as `null`). */
  add(value: unknown): void {
    switch (typeof value) {
      case 'string':
        this.addString(value);
        return;
      case 'number':
        this.addAscii(Number.isFinite(value) ? String(value).length : 4);
        return;
      case 'boolean':
        this.addAscii(value ? 4 : 5);
        return;
      case 'bigint':
        this.addAscii(String(value).length);
        return;
      case 'object':
        if (value === null) this.addAscii(4);
        else if (Array.isArray(value)) this.addArray(value);
        else this.addObject(value as Record<string, unknown>);
        return;
      default:
        // undefined, functions, symbols: `null` in an array (an object leaves their keys out).
        this.addAscii(4);
    }
  }

  /** Add `"key":` (a key of an object, with its colon). */
  addKey(key: string): void {
    this.addString(key);
    this.addAscii(1);
  }

  /** Add `n` characters of ASCII (one byte each). */
  addAscii(n: number): void {
    this.chars += n;
    this.bytes += n;
  }

  private addString(text: string): void {
    if (!NEEDS_CARE.test(text)) {
      this.chars += text.length + 2;
      this.bytes += Buffer.byteLength(text, 'utf8') + 2;
      return;
    }
    // Rare (quotes, control characters, characters outside the BMP): the escaped text, once.
    const json = JSON.stringify(text);
    this.chars += json.length;
    this.bytes += Buffer.byteLength(json, 'utf8');
  }

  private addArray(items: readonly unknown[]): void {
    if (this.depth >= DEEPEST_MEASURED) return this.addAscii(2);
    this.addAscii(items.length === 0 ? 2 : items.length + 1);
    this.depth++;
    for (let i = 0; i < items.length && !this.stopped; i++) this.add(items[i]);
    this.depth--;
  }

  private addObject(object: Record<string, unknown>): void {
    if (this.depth >= DEEPEST_MEASURED) return this.addAscii(2);
    this.depth++;
    this.addFields(object);
    this.depth--;
  }

  private addFields(object: Record<string, unknown>): void {
    let fields = 0;
    for (const key of Object.keys(object)) {
      if (this.stopped) return;
      const value = object[key];
      if (!isWritten(value)) continue;
      fields++;
      this.addKey(key);
      this.add(value);
    }
    // The braces and the commas between fields.
    this.addAscii(fields === 0 ? 2 : fields + 1);
  }
}

/** Whether a value of this type is written by JSON.stringify as an object field (not left out). */
export function isWritten(value: unknown): boolean {
  return value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
}
