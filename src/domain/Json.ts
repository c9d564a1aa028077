/**
 * JSON values: what tool arguments and other free-form payload fields may hold, so that every event
 * survives a round trip through any store unchanged.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** A JSON value: null, a boolean, a finite number, a string, an array or an object of JSON values. */
export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** A JSON object: the shape of tool arguments. */
export type JsonObject = { readonly [key: string]: Json }

/**
 * Whether a value is JSON (plain objects and arrays of JSON, finite numbers, strings, booleans, null).
 * Walked without recursion, so a value nested however deep gets an answer, not a stack overflow; a
 * value that reaches the same object twice (shared or cyclic, which parsed JSON never does) is not.
 */
export const isJson = (value: unknown): value is Json => {
  const pending: Array<unknown> = [value]
  const seen = new Set<object>()
  while (pending.length > 0) {
    const next = pending.pop()
    switch (typeof next) {
      case "string":
      case "boolean":
        continue
      case "number":
        if (!Number.isFinite(next)) return false
        continue
      case "object": {
        if (next === null) continue
        if (seen.has(next)) return false
        seen.add(next)
        if (Array.isArray(next)) {
          for (const item of next) pending.push(item)
          continue
        }
        const proto = Object.getPrototypeOf(next)
        if (proto !== Object.prototype && proto !== null) return false
        for (const item of Object.values(next)) pending.push(item)
        continue
      }
      default:
        return false
    }
  }
  return true
}

/** Whether a value nests arrays and objects more than `limit` levels deep; walked without recursion. */
export const nestsDeeperThan = (value: unknown, limit: number): boolean => {
  const pending: Array<readonly [unknown, number]> = [[value, 0]]
  while (pending.length > 0) {
    const [next, depth] = pending.pop()!
    if (typeof next !== "object" || next === null) continue
    // A cycle, too, ends here: its depth grows without end.
    if (depth >= limit) return true
    for (const item of Array.isArray(next) ? next : Object.values(next)) pending.push([item, depth + 1])
  }
  return false
}

/**
 * The schema of a {@link Json} value. It checks the value and passes it through as it is: rebuilding
 * objects key by key would lose a key such as `__proto__` that JSON allows.
 */
export const Json: Schema.Schema<Json> = Schema.declare(isJson, {
  identifier: "Json",
  description: "a JSON value",
  arbitrary: () => (fc) => fc.jsonValue() as unknown as ReturnType<typeof fc.constant<Json>>
})

/** Whether a JSON value is an object (not null, not an array). */
export const isObject = (value: Json): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)
