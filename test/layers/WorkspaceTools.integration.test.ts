import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { Json } from "../../src/domain/Json.js"
import * as CommandLine from "../../src/layers/workspace/CommandLine.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { ToolContext } from "../../src/services/ToolRouter.js"
import { tempDir } from "../helpers.js"

/** A workspace in a temp dir, and a way to call a tool there as the engine would (prepare, then execute). */
const workspace = (options: WorkspaceTools.Options = {}) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const root = yield* tempDir
    const cwd = `${root}/ws`
    yield* fs.makeDirectory(cwd)
    const tools = yield* WorkspaceTools.make(options)
    const progress: Array<string> = []
    const context: ToolContext = { sessionId: "s", turnId: "t", cwd, progress: (m) => Effect.sync(() => progress.push(m)) }
    let n = 0
    const prepare = (tool: string, args: Json) => tools.prepare({ toolCallId: `c${++n}`, tool, args }, cwd)
    const call = (tool: string, args: Json) =>
      Effect.either(Effect.flatMap(prepare(tool, args), (prepared) => tools.execute(prepared, context)))
    const write = (path: string, text: string | Uint8Array) =>
      typeof text === "string" ? fs.writeFileString(`${cwd}/${path}`, text) : fs.writeFile(`${cwd}/${path}`, text)
    return { fs, root, cwd, tools, call, prepare, write, progress }
  })

const ok = <A, E>(result: Either.Either<A, E>): A => {
  if (Either.isLeft(result)) throw new Error(`expected success, got ${JSON.stringify(result.left)}`)
  return result.right
}
const failure = <A, E>(result: Either.Either<A, E>): E => {
  if (Either.isRight(result)) throw new Error(`expected failure, got ${JSON.stringify(result.right)}`)
  return result.left
}

describe("WorkspaceTools", () => {
  it.scoped("offers six tools with plain JSON Schemas", () =>
    Effect.gen(function*() {
      const { tools } = yield* workspace()
      expect(tools.definitions.map((d) => d.name)).toEqual(["read_file", "write_file", "edit_file", "list_dir", "grep", "shell"])
      for (const d of tools.definitions) {
        expect(d.inputSchema).toMatchObject({ type: "object", additionalProperties: false })
        expect(JSON.stringify(d.inputSchema)).not.toContain("$ref")
      }
    }).pipe(Effect.provide(NodeContext.layer)))

  describe("read_file", () => {
    it.scoped("reads text, by line range too, bounded with a visible marker", () =>
      Effect.gen(function*() {
        const { call, write } = yield* workspace({ maxResultBytes: 64 })
        yield* write("a.txt", "one\ntwo\nthree\n")
        expect(ok(yield* call("read_file", { path: "a.txt" })).result).toBe("one\ntwo\nthree\n")
        expect(ok(yield* call("read_file", { path: "a.txt", offset: 2, limit: 1 })).result).toBe("two")
        yield* write("big.txt", "é".repeat(100))
        const big = ok(yield* call("read_file", { path: "big.txt" })).result
        expect(big.startsWith("é".repeat(32))).toBe(true)
        expect(big).toContain("[… truncated: 136 more bytes]")
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("binary, huge, missing files and directories fail with codes the model can read", () =>
      Effect.gen(function*() {
        const { call, write, fs, cwd } = yield* workspace({ maxFileBytes: 1000 })
        yield* write("bin.dat", new Uint8Array([0x89, 0x50, 0x00, 0x01]))
        yield* write("huge.txt", "x".repeat(2000))
        yield* fs.makeDirectory(`${cwd}/dir`)
        expect(failure(yield* call("read_file", { path: "bin.dat" }))).toMatchObject({ errorCode: "binary_file" })
        expect(failure(yield* call("read_file", { path: "huge.txt" }))).toMatchObject({ errorCode: "file_too_large" })
        expect(failure(yield* call("read_file", { path: "nope.txt" }))).toMatchObject({ errorCode: "not_found", message: "nope.txt does not exist" })
        expect(failure(yield* call("read_file", { path: "dir" }))).toMatchObject({ errorCode: "is_directory" })
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("invalid and extra arguments are invalid_arguments", () =>
      Effect.gen(function*() {
        const { prepare } = yield* workspace()
        for (const args of [{}, { path: 1 }, { path: "a", offset: 0 }, { path: "a", extra: true }, "a.txt"] as const) {
          expect(failure(yield* Effect.either(prepare("read_file", args)))).toMatchObject({ errorCode: "invalid_arguments" })
        }
        expect(failure(yield* Effect.either(prepare("rm_everything", {})))).toMatchObject({ errorCode: "unknown_tool" })
      }).pipe(Effect.provide(NodeContext.layer)))
  })

  describe("paths", () => {
    it.scoped("resolve against cwd with symlinks followed; escapes are outside cwd", () =>
      Effect.gen(function*() {
        const { prepare, fs, root, cwd } = yield* workspace()
        yield* fs.makeDirectory(`${cwd}/src`)
        yield* fs.symlink(root, `${cwd}/src/up`)
        yield* fs.symlink(`${cwd}/src`, `${cwd}/inside-link`)
        const cases: ReadonlyArray<[string, boolean]> = [
          ["src/a.ts", true],
          ["./src/../src/a.ts", true],
          ["inside-link/a.ts", true],
          [cwd, true],
          ["../x", false],
          ["src/../../x", false],
          ["/etc/passwd", false],
          ["src/up/x", false],
          ["src/up/ws/a.ts", true]
        ]
        for (const [path, insideCwd] of cases) {
          const prepared = ok(yield* Effect.either(prepare("read_file", { path })))
          expect(prepared.paths[0], path).toMatchObject({ requested: path, insideCwd })
        }
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("a link swapped between the permission check and the run is caught", () =>
      Effect.gen(function*() {
        const { tools, prepare, fs, root, cwd } = yield* workspace()
        yield* fs.writeFileString(`${root}/secret`, "secret")
        yield* fs.writeFileString(`${cwd}/harmless`, "harmless")
        yield* fs.symlink(`${cwd}/harmless`, `${cwd}/link`)
        const prepared = ok(yield* Effect.either(prepare("read_file", { path: "link" })))
        expect(prepared.paths[0]!.insideCwd).toBe(true)
        yield* fs.remove(`${cwd}/link`)
        yield* fs.symlink(`${root}/secret`, `${cwd}/link`)
        const result = yield* Effect.either(tools.execute(prepared, { sessionId: "s", turnId: "t", cwd, progress: () => Effect.void }))
        expect(failure(result)).toMatchObject({ errorCode: "path_changed" })
      }).pipe(Effect.provide(NodeContext.layer)))
  })

  describe("write_file and edit_file", () => {
    it.scoped("write creates folders; edit replaces exact text once, or every time when asked", () =>
      Effect.gen(function*() {
        const { call, fs, cwd } = yield* workspace()
        expect(ok(yield* call("write_file", { path: "deep/new/file.txt", content: "a-b-a" })).result).toBe("Wrote 5 bytes to deep/new/file.txt")
        expect(failure(yield* call("edit_file", { path: "deep/new/file.txt", oldString: "a", newString: "x" }))).toMatchObject({ errorCode: "ambiguous_match" })
        expect(failure(yield* call("edit_file", { path: "deep/new/file.txt", oldString: "zzz", newString: "x" }))).toMatchObject({ errorCode: "no_match" })
        ok(yield* call("edit_file", { path: "deep/new/file.txt", oldString: "-b-", newString: "$&$1" }))
        expect(yield* fs.readFileString(`${cwd}/deep/new/file.txt`)).toBe("a$&$1a")
        expect(ok(yield* call("edit_file", { path: "deep/new/file.txt", oldString: "a", newString: "A", replaceAll: true })).result).toBe("Replaced 2 occurrences in deep/new/file.txt")
        expect(yield* fs.readFileString(`${cwd}/deep/new/file.txt`)).toBe("A$&$1A")
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("an edit whose result would be over maxFileBytes is refused file_too_large and changes nothing (a one-letter replaceAll made a file 200 times the limit)", () =>
      Effect.gen(function*() {
        const { call, write, fs, cwd } = yield* workspace({ maxFileBytes: 10_000 })
        yield* write("a.txt", "a".repeat(10_000))
        // 10,000 occurrences of 1 byte, each becoming 200: 2,000,000 bytes.
        expect(failure(yield* call("edit_file", { path: "a.txt", oldString: "a", newString: "b".repeat(200), replaceAll: true }))).toMatchObject({
          errorCode: "file_too_large",
          message: "the edit would make a.txt 2000000 bytes, over the 10000-byte limit"
        })
        expect((yield* fs.stat(`${cwd}/a.txt`)).size).toBe(BigInt(10_000))
        // One replacement too, counted in UTF-8 bytes (é is two).
        yield* write("b.txt", "x")
        expect(failure(yield* call("edit_file", { path: "b.txt", oldString: "x", newString: "é".repeat(5_001) }))).toMatchObject({ errorCode: "file_too_large" })
        ok(yield* call("edit_file", { path: "b.txt", oldString: "x", newString: "é".repeat(4_999) + "y" }))
        expect((yield* fs.stat(`${cwd}/b.txt`)).size).toBe(BigInt(9_999))
        // Up to the limit, and shrinking edits, still work.
        ok(yield* call("edit_file", { path: "a.txt", oldString: "a", newString: "", replaceAll: true }))
        expect(yield* fs.readFileString(`${cwd}/a.txt`)).toBe("")
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("concurrent edits of one file are serialized: none is lost", () =>
      Effect.gen(function*() {
        const { call, write, fs, cwd } = yield* workspace()
        const keys = Array.from({ length: 20 }, (_, i) => `key${i}`)
        yield* write("config.txt", keys.map((k) => `${k}=old`).join("\n"))
        const results = yield* Effect.forEach(keys, (k) => call("edit_file", { path: "config.txt", oldString: `${k}=old`, newString: `${k}=new` }), {
          concurrency: "unbounded"
        })
        results.forEach((r) => ok(r))
        expect(yield* fs.readFileString(`${cwd}/config.txt`)).toBe(keys.map((k) => `${k}=new`).join("\n"))
      }).pipe(Effect.provide(NodeContext.layer)))
  })

  describe("list_dir and grep", () => {
    it.scoped("list_dir lists sorted entries, folders with a slash", () =>
      Effect.gen(function*() {
        const { call, write, fs, cwd } = yield* workspace()
        yield* fs.makeDirectory(`${cwd}/b`)
        yield* write("c.txt", "")
        yield* write("a.txt", "")
        expect(ok(yield* call("list_dir", {})).result).toBe("a.txt\nb/\nc.txt")
        expect(failure(yield* call("list_dir", { path: "a.txt" }))).toMatchObject({ errorCode: "not_a_directory" })
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("grep finds path:line:text, skipping node_modules and binaries", () =>
      Effect.gen(function*() {
        const { call, write, fs, cwd } = yield* workspace()
        yield* fs.makeDirectory(`${cwd}/src`)
        yield* fs.makeDirectory(`${cwd}/node_modules`)
        yield* write("src/a.ts", "const x = 1\nconst needle = 2\n")
        yield* write("node_modules/dep.js", "needle")
        yield* write("bin.dat", new Uint8Array([110, 101, 101, 100, 108, 101, 0]))
        expect(ok(yield* call("grep", { pattern: "NEEDLE", ignoreCase: true })).result).toBe("src/a.ts:2:const needle = 2")
        expect(ok(yield* call("grep", { pattern: "absent" })).result).toBe("No matches.")
        expect(failure(yield* call("grep", { pattern: "(" }))).toMatchObject({ errorCode: "invalid_arguments" })
      }).pipe(Effect.provide(NodeContext.layer)))
  })

  describe("shell", () => {
    it.scoped("runs argv without a shell: quotes group words, metacharacters inside quotes stay literal", () =>
      Effect.gen(function*() {
        const { call, prepare } = yield* workspace()
        expect(ok(yield* call("shell", { command: `printf '%s|' "a b" 'c;d' e\\ f` }))).toEqual({ result: "a b|c;d|e f|", exitCode: 0 })
        const prepared = ok(yield* Effect.either(prepare("shell", { command: "git status" })))
        expect(prepared).toMatchObject({ risk: "read", scope: "shell:git:read", command: { argv: ["git", "status"], hazards: [] } })
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("a failing command completes with its exit code; a missing one fails command_not_found", () =>
      Effect.gen(function*() {
        const { call } = yield* workspace()
        expect(ok(yield* call("shell", { command: "ls does-not-exist" }))).toMatchObject({ exitCode: 2, result: expect.stringContaining("[exit code 2]") })
        expect(failure(yield* call("shell", { command: "no-such-program-here" }))).toMatchObject({ errorCode: "command_not_found" })
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("a command that hangs is stopped at its timeout", () =>
      Effect.gen(function*() {
        const { call } = yield* workspace()
        const result = failure(yield* call("shell", { command: "sleep 30", timeoutMs: 300 }))
        expect(result).toMatchObject({ errorCode: "timeout" })
        expect(result.message).toContain("did not finish within 300ms")
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("output is bounded, and provider keys never reach a command", () =>
      Effect.gen(function*() {
        const { call } = yield* workspace({ maxResultBytes: 100, hiddenEnv: ["MY_TOKEN"] })
        const long = ok(yield* call("shell", { command: "seq 1 1000" }))
        expect(long.result.length).toBeLessThan(200)
        expect(long.result).toMatch(/\[… truncated: \d+ more bytes\]$/)
        process.env.OPENAI_API_KEY = "sk-test-secret"
        process.env.MY_TOKEN = "hidden-token"
        try {
          const env = ok(yield* call("shell", { command: "env" }))
          expect(env.result).not.toContain("sk-test-secret")
          expect(env.result).not.toContain("hidden-token")
        } finally {
          delete process.env.OPENAI_API_KEY
          delete process.env.MY_TOKEN
        }
      }).pipe(Effect.provide(NodeContext.layer)))
  })
})

describe("CommandLine.parse", () => {
  const cases: ReadonlyArray<[string, ReadonlyArray<string>, ReadonlyArray<string>]> = [
    ["ls -la src", ["ls", "-la", "src"], []],
    [`echo "a b" 'c d' e\\ f`, ["echo", "a b", "c d", "e f"], []],
    [`echo 'a;b|c>d'`, ["echo", "a;b|c>d"], []],
    ["ls; rm x", ["ls", "rm", "x"], ["chaining"]],
    ["a && b || c", ["a", "b", "c"], ["chaining"]],
    ["cat x | grep y", ["cat", "x", "grep", "y"], ["pipe"]],
    ["echo x > f", ["echo", "x", "f"], ["redirection"]],
    ["sort < f", ["sort", "f"], ["redirection"]],
    ["echo $(id)", ["echo", "$(id)"], ["substitution"]],
    ["echo \"$HOME\"", ["echo", "$HOME"], ["substitution"]],
    ["echo `id`", ["echo", "`id`"], ["substitution"]],
    ["sleep 1 &", ["sleep", "1"], ["background"]],
    ["sudo ls", ["sudo", "ls"], ["sudo"]],
    ["rm -rf /", ["rm", "-rf", "/"], ["recursive_delete"]],
    ["rm -fR dir", ["rm", "-fR", "dir"], ["recursive_delete"]],
    ["rm file", ["rm", "file"], []],
    ["ls\nrm x", ["ls", "rm", "x"], ["chaining"]]
  ]
  for (const [text, argv, hazards] of cases) {
    it(`${JSON.stringify(text)}`, () => {
      const parsed = CommandLine.parse(text)
      expect(parsed.argv).toEqual(argv)
      expect([...parsed.hazards].sort()).toEqual([...hazards].sort())
    })
  }

  it("an unterminated quote gives no argv", () => {
    expect(CommandLine.parse(`echo "open`)).toMatchObject({ argv: [], unterminated: true })
  })

  it("classifies risk by program", () => {
    expect(CommandLine.riskOf(["ls"])).toBe("read")
    expect(CommandLine.riskOf(["git", "log"])).toBe("read")
    expect(CommandLine.riskOf(["git", "commit"])).toBe("write")
    expect(CommandLine.riskOf(["git", "push"])).toBe("network")
    expect(CommandLine.riskOf(["mv", "a", "b"])).toBe("destructive")
    expect(CommandLine.riskOf(["find", ".", "-delete"])).toBe("destructive")
    expect(CommandLine.riskOf(["curl", "x"])).toBe("network")
    expect(CommandLine.riskOf(["npm", "install"])).toBe("network")
    expect(CommandLine.riskOf(["make"])).toBe("write")
  })
})
