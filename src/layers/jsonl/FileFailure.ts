/**
 * File system errors of the JSONL store as `EventStoreFailure`s, naming the path and the reason
 * (a full disk, a permission, anything else).
 *
 * @since 0.1.0
 * @internal
 */
import type { PlatformError } from "@effect/platform/Error"
import { EventStoreFailure, type EventStoreFailureReason } from "../../domain/Errors.js"
import * as Directories from "../Directories.js"

const failureReason = (error: PlatformError): EventStoreFailureReason => {
  const code = error._tag === "SystemError" ? (error.cause as { code?: unknown } | undefined)?.code : undefined
  if (Directories.noRoom(code)) return "disk_full"
  if (error._tag === "SystemError" && error.reason === "PermissionDenied") return "permission_denied"
  if (code === "EROFS" || code === "EACCES" || code === "EPERM") return "permission_denied"
  return "unavailable"
}

/** Translates a file system error, naming the path it concerns. */
export const fromPlatform = (operation: EventStoreFailure["operation"], path: string, sessionId?: string) => (error: PlatformError) =>
  new EventStoreFailure({
    reason: failureReason(error),
    operation,
    path,
    detail: error.message,
    cause: error,
    ...(sessionId === undefined ? {} : { sessionId })
  })

const nodeReason = (error: unknown): EventStoreFailureReason => {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  if (Directories.noRoom(code)) return "disk_full"
  if (code === "EROFS" || code === "EACCES" || code === "EPERM") return "permission_denied"
  return "unavailable"
}

/**
 * What opening a log that is a link fails with. The store makes its logs itself, never as links, so
 * one is something planted (a repository's shipped data dir pointing at a log of another project, or
 * at any file of the user's): it is opened with `O_NOFOLLOW`, neither read as this session nor written.
 */
export const linkedLog = (operation: EventStoreFailure["operation"], path: string, sessionId?: string) =>
  new EventStoreFailure({ reason: "corrupt", operation, path, detail: "a link, not a log", ...(sessionId === undefined ? {} : { sessionId }) })

/** `fromNode` for the `O_NOFOLLOW` open of a log: a link there (`ELOOP`) is {@link linkedLog}. */
export const fromLogOpen = (operation: EventStoreFailure["operation"], path: string, sessionId?: string) => (error: unknown) =>
  (error as NodeJS.ErrnoException | undefined)?.code === "ELOOP" ? linkedLog(operation, path, sessionId) : fromNode(operation, path, sessionId)(error)

/** Translates an error thrown by `node:fs`, naming the path it concerns (its code, never a stack). */
export const fromNode = (operation: EventStoreFailure["operation"], path: string, sessionId?: string) => (error: unknown) =>
  new EventStoreFailure({
    reason: nodeReason(error),
    operation,
    path,
    detail: error instanceof Error ? error.message : String(error),
    cause: error,
    ...(sessionId === undefined ? {} : { sessionId })
  })
