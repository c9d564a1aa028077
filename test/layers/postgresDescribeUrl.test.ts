/**
 * What failures print of the PostgreSQL URL (`PostgresEventStore.describeUrl`): the server and the
 * database only. review59a: a password holding `/` (or `@`) moved the host's end, and the part of
 * the password after it was printed as the host or the path
 * (`postgres://agent:p@ss/word@127.0.0.1:55459/agent` → `postgresql://ss/word@127.0.0.1:55459/agent`).
 */
import * as Redacted from "effect/Redacted"
import { describe, expect, it } from "vitest"
import { describeUrl } from "../../src/layers/PostgresEventStore.js"

const describe_ = (url: string) => describeUrl(Redacted.make(url))
const unreadable = "postgresql (an unreadable URL)"

describe("describeUrl", () => {
  it("prints the host, port and database, never the user or password", () => {
    expect(describe_("postgres://agent:s3cret@db.internal:5432/agent")).toBe("postgresql://db.internal:5432/agent")
    expect(describe_("postgresql://agent:p%40ss%2Fword@127.0.0.1/agent?sslmode=require")).toBe("postgresql://127.0.0.1/agent")
    expect(describe_("postgres://[::1]:5433/agent")).toBe("postgresql://[::1]:5433/agent")
    expect(describe_("postgres://db/agent")).toBe("postgresql://db/agent")
  })

  it("calls a URL whose password moved the host's end unreadable, printing none of it", () => {
    for (const url of [
      "postgres://agent:p@ss/word@127.0.0.1:55459/agent",
      "postgres://agent:/s3cretX@127.0.0.1:55459/agent",
      "postgres://agent:4711/s3cret@db.internal:5432/agent",
      "postgres://agent:ab/cd@db/agent",
      "postgres://agent:pa?ss@db/agent",
      "postgres://agent:12?ss@db/agent",
      "postgres://agent:12#ss@db/agent",
      "postgres://agent:p@ss@db/agent",
      "postgres://agent:p:w@db/a:b"
    ]) {
      expect(describe_(url), url).toBe(unreadable)
    }
  })
})
