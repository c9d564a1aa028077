/**
 * An esbuild plugin for the CLI bundle: an import from the package's barrel (`src/index.ts`) becomes
 * imports of the modules it names. The sources keep importing the public API (the dependency rule
 * of ARCHITECTURE.md); the bundle gets what each module really uses.
 *
 * Why: esbuild assigns whole files to chunks by which entry points reach them through imports,
 * whether or not the names are used. Through the barrel every handler "reaches" every module of
 * the library, so `sessions` or `trust` loaded the engine, the workspace tools and `web_fetch` in
 * one shared chunk (~340 KB to read and compile) though they use none of them. Rewritten, a
 * handler's chunks hold the modules it names and what those import.
 *
 * The rewrite keeps the line count (the generated imports share the original's lines), so source
 * maps still name the right lines. Only `import { … } from "<…>/index.js"` is rewritten; a name the
 * barrel does not re-export is left to the barrel, so nothing can go missing.
 */
import { readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

/** The barrel's re-exports: name → { from: module path (absolute), namespace: `export * as` or a named export }. */
const readBarrel = (barrel) => {
  const text = readFileSync(barrel, "utf8")
  const names = new Map()
  for (const m of text.matchAll(/export\s+\*\s+as\s+(\w+)\s+from\s+"([^"]+)"/g)) {
    names.set(m[1], { from: resolve(dirname(barrel), m[2]), namespace: true })
  }
  for (const m of text.matchAll(/export\s+\{([^}]*)\}\s+from\s+"([^"]+)"/g)) {
    for (const spec of m[1].split(",").map((s) => s.trim()).filter(Boolean)) {
      if (spec.startsWith("type ")) continue
      names.set(spec, { from: resolve(dirname(barrel), m[2]), namespace: false })
    }
  }
  return names
}

/** The plugin, for a barrel at `barrel` (an absolute path to `src/index.ts`). */
export const barrelImports = (barrel) => {
  const names = readBarrel(barrel)
  const barrelJs = barrel.replace(/\.ts$/, ".js")
  return {
    name: "barrel-imports",
    setup(build) {
      build.onLoad({ filter: /\/src\/.*\.ts$/ }, (args) => {
        if (args.path === barrel) return undefined
        const source = readFileSync(args.path, "utf8")
        if (!source.includes("index.js\"")) return undefined
        const contents = source.replace(/import\s+(type\s+)?\{([^}]*)\}\s+from\s+"([^"]+\/index\.js)"/g, (whole, typeOnly, specs, from) => {
          if (typeOnly !== undefined || resolve(dirname(args.path), from) !== barrelJs) return whole
          const imports = []
          const kept = []
          for (const spec of specs.split(",").map((s) => s.trim()).filter(Boolean)) {
            if (spec.startsWith("type ")) continue
            const [name, alias = name] = spec.split(/\s+as\s+/)
            const target = names.get(name)
            if (target === undefined) {
              kept.push(spec)
              continue
            }
            let path = relative(dirname(args.path), target.from).replace(/\.ts$/, ".js")
            if (!path.startsWith(".")) path = `./${path}`
            imports.push(target.namespace ? `import * as ${alias} from "${path}"` : `import { ${name} as ${alias} } from "${path}"`)
          }
          if (kept.length > 0) imports.push(`import { ${kept.join(", ")} } from "${from}"`)
          const lines = whole.split("\n").length - 1
          return imports.join("; ") + (imports.length === 0 ? "" : ";") + "\n".repeat(lines)
        })
        return { contents, loader: "ts", resolveDir: dirname(args.path) }
      })
    }
  }
}

export const srcBarrel = (root) => join(root, "src", "index.ts")
