/**
 * Whether an API key can be sent at all. The SDKs put the key in a header (`x-api-key`,
 * `Authorization: Bearer …`); a key with a character no header carries — the docs' placeholder `…`
 * pasted as the key, a control character copied with it — failed only at the first request, as an
 * unknown error ("Cannot convert argument to a ByteString"). The CLI and the provider layers refuse
 * such a key up front through this one check.
 *
 * @since 0.14.0
 */

/**
 * Why `key` cannot be sent, or `undefined` when it can: the first character outside printable ASCII,
 * by its code point and place ("holds U+2026 at character 1, …") — never the key's own characters.
 * The whitespace around the key is fine: `fetch` trims a header's value.
 */
export const unusable = (key: string): string | undefined => {
  const value = key.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "")
  const at = value.search(/[^ -~]/)
  if (at === -1) return undefined
  const codePoint = `U+${value.codePointAt(at)!.toString(16).toUpperCase().padStart(4, "0")}`
  return `holds ${codePoint} at character ${at + 1}, which no API key has (a key is printable ASCII)`
}
