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

/** Whether a value is JSON (plain objects and arrays of JSON, finite numbers, strings, booleans, null). */
export const isJson = (value: unknown): value is Json => {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true
    case "number":
      return Number.isFinite(value)
    case "object": {
      if (value === null) return true
      if (Array.isArray(value)) return value.every(isJson)
      const proto = Object.getPrototypeOf(value)
      return (proto === Object.prototype || proto === null) && Object.values(value).every(isJson)
    }
    default:
      return false
  }
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
