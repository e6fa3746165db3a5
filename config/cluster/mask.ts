// URLs are printed and logged with their password replaced, never in clear.

/**
 * `redis://user:secret@host:6379/0` -> `redis://user:***@host:6379/0`. Errs on the side of hiding:
 * everything between the first ':' after the scheme and the last '@' is masked, so a password
 * holding unescaped '/' or '@' does not leak either. The rest of the text is kept as given.
 */
export function maskUrl(url: string | undefined): string {
  if (url === undefined) return '';
  const m = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([\s\S]*)$/.exec(url);
  if (!m) return url;
  const [, scheme, rest] = m as unknown as [string, string, string];
  const at = rest.lastIndexOf('@');
  if (at < 0) return url;
  const colon = rest.indexOf(':');
  if (colon < 0 || colon > at) return url; // a user name but no password
  return `${scheme}${rest.slice(0, colon)}:***@${rest.slice(at + 1)}`;
}
