/**
 * A shell call prepared by the workspace's tools in `cwd` and decided by the permission policy: the
 * path checks and the rules together, as a session decides it.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"

export const shellDecisions = (cwd: string) => {
  const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
  const prepare = (command: string) => Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
  const decide = async (mode: PermissionPolicy.Mode, command: string, rules: ReadonlyArray<PermissionPolicy.Rule>) =>
    PermissionPolicy.decide({ mode, rules }, { sessionId: "s", cwd, call: await prepare(command), remembered: [] })
  return { prepare, decide }
}

/** `shell:*`: an allow rule for every command. */
export const anything: PermissionPolicy.Rule = { name: "anything", tool: "shell", command: "*", decision: "allow" }
