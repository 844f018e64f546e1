import { describe, expect, it } from 'vitest';
import { queryValues } from '../src/query.js';

describe('queryValues', () => {
  it('reads every value of a name', () => {
    expect(queryValues('sessionId=a&waitMs=5&sessionId=b', 'sessionId')).toEqual(['a', 'b']);
    expect(queryValues('waitMs=5', 'waitMs')).toEqual(['5']);
  });

  it('answers undefined when the name is absent', () => {
    expect(queryValues('', 'sessionId')).toBeUndefined();
    expect(queryValues('waitMs=5', 'sessionId')).toBeUndefined();
    expect(queryValues('xsessionId=1', 'sessionId')).toBeUndefined();
  });

  it('treats a name without = as an empty value', () => {
    expect(queryValues('waitMs&a=1', 'waitMs')).toEqual(['']);
    expect(queryValues('waitMs=', 'waitMs')).toEqual(['']);
  });

  it('decodes escapes and + in names and values, as URLSearchParams does', () => {
    for (const search of ['session%49d=a%20b', 'sessionId=a+b', 'sessionId=%zz&sessionId=%E2%82%AC', 'a=%&sessionId=x%2']) {
      expect(queryValues(search, 'sessionId')).toEqual(new URLSearchParams(search).getAll('sessionId'));
    }
  });
});
