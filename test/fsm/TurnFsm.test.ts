import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as TurnFsm from "../../src/fsm/TurnFsm.js"

const phases = Object.values(TurnFsm.RunningPhase)
const anyInput: FastCheck.Arbitrary<TurnFsm.TurnInput> = FastCheck.oneof(
  FastCheck.constant({ _tag: "Start" } as const),
  FastCheck.constantFrom(...phases).map((phase) => ({ _tag: "Enter", phase }) as const),
  FastCheck.constant({ _tag: "Complete" } as const),
  FastCheck.constant({ _tag: "Cancel" } as const),
  FastCheck.constant({ _tag: "Fail" } as const)
)

/** The legal transitions, written out independently of the implementation. */
const legal = (from: TurnFsm.TurnState, input: TurnFsm.TurnInput["_tag"]): TurnFsm.TurnState | undefined => {
  if (from === "idle") return input === "Start" ? "running" : undefined
  if (from === "running") {
    return ({ Enter: "running", Complete: "completed", Cancel: "cancelled", Fail: "failed" } as const)[input as "Enter"]
  }
  return undefined
}

describe("TurnFsm", () => {
  it("the lifecycle idle → running → completed | cancelled | failed", () => {
    for (const end of ["Complete", "Cancel", "Fail"] as const) {
      let status = TurnFsm.initial
      for (const input of [{ _tag: "Start" }, { _tag: "Enter", phase: "model_streaming" }, { _tag: end }] as const) {
        status = Either.getOrThrow(TurnFsm.transition(status, input))
      }
      expect(TurnFsm.isTerminal(status)).toBe(true)
      expect(Either.isLeft(TurnFsm.transition(status, { _tag: "Start" }))).toBe(true)
    }
  })

  it("property: random input sequences — only legal transitions succeed, illegal ones fail typed and change nothing", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.array(anyInput, { maxLength: 30 }), (inputs) => {
        let status = TurnFsm.initial
        for (const input of inputs) {
          const expected = legal(status.state, input._tag)
          const result = TurnFsm.transition(status, input)
          if (expected === undefined) {
            expect(Either.isLeft(result)).toBe(true)
            if (Either.isLeft(result)) {
              expect(result.left).toBeInstanceOf(TurnFsm.IllegalTransition)
              expect(result.left).toMatchObject({ from: status.state, input: input._tag })
            }
          } else {
            expect(Either.isRight(result)).toBe(true)
            if (Either.isRight(result)) {
              expect(result.right.state).toBe(expected)
              if (input._tag === "Enter" && result.right.state === "running") expect(result.right.phase).toBe(input.phase)
              status = result.right
            }
          }
        }
      }),
      { numRuns: 500 }
    )
  })
})
