/** Keeping credentials out of logs and printed settings. */

/**
 * `text` with the credentials a URL may carry hidden: user info (`ws://user:pw@host`) and the
 * query (`?token=…`) become `***`. Text that is not a URL is returned as it is.
 */
export function redactUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return text;
  }
  if (!url.username && !url.password && !url.search) return text;
  if (url.username) url.username = '***';
  if (url.password) url.password = '***';
  if (url.search) url.search = '***';
  return url.href;
}
