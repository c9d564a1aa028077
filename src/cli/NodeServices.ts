/**
 * The Node services the CLI uses: the file system, paths and the terminal — `NodeContext.layer`
 * without its command executor and worker manager, which no command uses (the shell tool and the
 * worker threads of `web_fetch` and the search matcher use Node's own modules).
 *
 * Why not `NodeContext.layer`: importing it loads `@effect/platform`'s worker modules and
 * `node:child_process` (with `net` and the stream helpers) at every start, and builds the
 * worker's error schemas as the modules load (~10 ms of a `sessions` that lists nothing).
 *
 * @since 0.12.0
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import * as Layer from "effect/Layer"

/** `FileSystem`, `Path` and `Terminal` on Node. */
export const layer = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeTerminal.layer)
