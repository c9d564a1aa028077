/**
 * The one member of `pg` (untyped: no @types/pg) the PostgreSQL store uses itself: the driver's
 * parsers by type id, which a connection's own `types` falls back to.
 */
declare module "pg" {
  export const types: {
    readonly getTypeParser: (oid: number, format?: "text" | "binary") => (value: string) => unknown
  }
  export interface CustomTypesConfig {
    readonly getTypeParser: (oid: number, format?: "text" | "binary") => (value: string) => unknown
  }
}
