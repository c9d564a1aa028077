/**
 * A URL as a message may name it. A base URL can carry a secret — `user:password@`, a `?key=…` a
 * gateway wants, a fragment — and the messages that name where a request went (a connection that
 * failed, which server answers) are printed and logged.
 *
 * @since 0.14.0
 */

/**
 * `url`'s scheme, host, port and path: never its userinfo, query or fragment. What does not parse as
 * a URL is not quoted at all (it may be a key pasted in the wrong place).
 */
export const shown = (url: string): string => {
  if (!URL.canParse(url)) return "(an address that is not a URL)"
  const { host, pathname, protocol } = new URL(url)
  return `${protocol}//${host}${pathname === "/" ? "" : pathname}`
}
