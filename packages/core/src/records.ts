/**
 * String records built from request data (headers, query parameters), whose keys are whatever a
 * caller sent: `constructor` or `__proto__` must be keys like any other.
 */

/**
 * `record[key] = value` as an own property. Plain assignment does that for every key but
 * `__proto__`, which would set the prototype instead (and drop the value). Plain objects stay
 * fast; a prototype-free one is a slower dictionary object.
 */
export function setOwn(record: Record<string, string>, key: string, value: string): void {
  if (key === '__proto__') Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
  else record[key] = value;
}
