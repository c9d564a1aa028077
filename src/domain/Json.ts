/**
 * JSON values: what tool arguments and other free-form payload fields may hold, so that every event
 * survives a round trip through any store unchanged.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** A JSON value: null, a boolean, a finite number, a string, an array or an object of JSON values. */
export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** The schema of a {@link Json} value. Rejects `undefined`, functions, `NaN` and infinities. */
export const Json: Schema.Schema<Json> = Schema.Union(
  Schema.Null,
  Schema.Boolean,
  Schema.Number.pipe(Schema.finite()),
  Schema.String,
  Schema.Array(Schema.suspend((): Schema.Schema<Json> => Json)),
  Schema.Record({ key: Schema.String, value: Schema.suspend((): Schema.Schema<Json> => Json) })
).annotations({ identifier: "Json" })

/** A JSON object: the shape of tool arguments. */
export type JsonObject = { readonly [key: string]: Json }

/** Whether a JSON value is an object (not null, not an array). */
export const isObject = (value: Json): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)
