/**
 * The server's secrets: the token every route but `/healthz` needs, compared in constant time, and
 * the one-time login codes that hand the token to a browser as an HttpOnly cookie — so the token
 * itself never sits in a URL, a browser history or the page's script.
 *
 * @since 0.2.0
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import * as Redacted from "effect/Redacted"

/** A fresh random token (32 bytes, base64url). */
export const randomToken = (): string => randomBytes(32).toString("base64url")

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

/**
 * Whether `given` is the token. Both sides are hashed first, so the comparison takes the same time
 * whatever the length or content of what was sent.
 */
export const matches = (token: Redacted.Redacted<string>, given: string | Redacted.Redacted<string> | undefined): boolean => {
  const candidate = given === undefined ? "" : typeof given === "string" ? given : Redacted.value(given)
  const expected = Redacted.value(token)
  return timingSafeEqual(digest(candidate), digest(expected)) && candidate.length > 0
}

/** Single-use codes: each opens the viewer once (it sets the cookie), then is forgotten. */
export interface LoginCodes {
  /** A new code, valid until used. */
  readonly issue: () => string
  /** Uses a code: true once for each code issued. */
  readonly consume: (code: string) => boolean
}

/** An empty set of login codes. */
export const loginCodes = (): LoginCodes => {
  const live = new Set<string>()
  return {
    issue: () => {
      const code = randomBytes(24).toString("base64url")
      live.add(code)
      return code
    },
    consume: (code) => {
      // Compared in constant time against every live code (there are one or two).
      let found: string | undefined
      for (const candidate of live) if (matches(Redacted.make(candidate), code)) found = candidate
      if (found === undefined) return false
      live.delete(found)
      return true
    }
  }
}

/** The `Set-Cookie` value that carries the token to the viewer: HttpOnly, SameSite=Strict, the whole site. */
export const cookieHeader = (name: string, token: Redacted.Redacted<string>): string =>
  `${name}=${Redacted.value(token)}; Path=/; HttpOnly; SameSite=Strict`

/** The value of one cookie in a `Cookie` header. */
export const cookieValue = (header: string | undefined, name: string): string | undefined => {
  if (header === undefined) return undefined
  for (const part of header.split(";")) {
    const at = part.indexOf("=")
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim()
  }
  return undefined
}
