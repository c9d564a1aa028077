/**
 * Mutual TLS for the runners' port (opt-in): every runner holds a certificate and key, and the CA
 * that signs the cluster's certificates. The accepting runner requires a client certificate signed
 * by that CA; the connecting runner checks the accepting runner's certificate against the CA and
 * against the address it dialled (the accepting runner's `host`, as the cluster knows it: an IP
 * address SAN for an address, a DNS SAN for a name — Node's `tls.checkServerIdentity`). TLS 1.2 at
 * least; 1.3 when both sides have it (Node's default maximum).
 *
 * The cluster secret's handshake (`RunnerPort`) runs inside the TLS stream, unchanged: TLS keeps the
 * traffic from readers and writers of the network, the secret still proves membership.
 *
 * A runner with TLS and one without cannot talk: the TLS side refuses the other's first bytes (not
 * a TLS hello, or not the handshake's greeting) at once. Either side says so in one log line (at
 * most one per `logEvery` and peer, with how many more), and the connecting side's RPC client takes
 * it for a connection that did not open and connects again.
 *
 * What this module shows (logs, errors) names the peer's address and OpenSSL's error code, never
 * the certificate, the key or where they were read from.
 *
 * @since 0.2.0
 */
import type * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as Socket from "@effect/platform/Socket"
import * as SocketServer from "@effect/platform/SocketServer"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { createPrivateKey, X509Certificate } from "node:crypto"
import { isIP } from "node:net"
import * as Tls from "node:tls"
import { MonotonicTime } from "../index.js"

/**
 * A runner's TLS material, in PEM: its certificate (chain), its private key, and the cluster CA's
 * certificate (the only CA its peers' certificates are checked against).
 */
export interface RunnerTls {
  readonly certificate: string | Uint8Array
  readonly key: Redacted.Redacted<string | Uint8Array>
  readonly ca: string | Uint8Array
}

/**
 * Material that can be replaced while the runner runs (a certificate rotated by cert-manager or
 * certbot): it reads as the current material, so each new connection the runner opens uses it, and
 * the runner's port (`server`) builds its context again for the connections it accepts after.
 * Connections already open keep the material they were made with.
 */
export interface Reloadable extends RunnerTls {
  /** Checks `tls` (`check`), then makes it the current material; refused, the current one stays. */
  readonly replace: (tls: RunnerTls) => Effect.Effect<void, InvalidTls>
  /** Calls `listener` after each replacement; returns its removal. */
  readonly onReplaced: (listener: () => void) => () => void
}

/** Whether the material is `Reloadable`. */
export const isReloadable = (tls: RunnerTls): tls is Reloadable => "replace" in tls && "onReplaced" in tls

/** Reloadable material, `initial` first. */
export const reloadable = (initial: RunnerTls): Reloadable => {
  let current = initial
  const listeners = new Set<() => void>()
  return {
    get certificate() {
      return current.certificate
    },
    get key() {
      return current.key
    },
    get ca() {
      return current.ca
    },
    replace: (tls) =>
      Effect.map(check(tls), () => {
        current = { certificate: tls.certificate, key: tls.key, ca: tls.ca }
        for (const listener of listeners) listener()
      }),
    onReplaced: (listener) => {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    }
  }
}

/** The oldest TLS version spoken; 1.3 is negotiated whenever both sides have it. */
export const minVersion = "TLSv1.2"

/** At most one log line per peer in this time, for a failure that repeats (a client reconnects, a stranger floods). */
export const logEvery = Duration.seconds(10)

/** Which of the three inputs a failure is about (`InvalidTls.input`). */
export const Input = Schema.Literal("certificate", "key", "ca")
export type Input = typeof Input.Type

/** `InvalidTls.code` when the key is not the certificate's (OpenSSL's code for it). */
export const keyMismatch = "ERR_OSSL_X509_KEY_VALUES_MISMATCH" as const

const inputNames: Record<Input, string> = { certificate: "certificate", key: "key", ca: "CA certificate" }

/**
 * The material could not be used: OpenSSL's code, never the material; `input` names which of the
 * three is wrong when one alone is (a PEM that does not parse, a key that is not the certificate's),
 * so an operator with three files need not guess.
 */
export class InvalidTls extends Schema.TaggedError<InvalidTls>()("InvalidTls", {
  code: Schema.String,
  input: Schema.optional(Input)
}) {
  override get message(): string {
    if (this.input === undefined) return `The runners' TLS certificate, key or CA cannot be used (${this.code})`
    if (this.code === keyMismatch) return "The runners' TLS key is not the one of its certificate"
    return `The runners' TLS ${inputNames[this.input]} cannot be used (${this.code})`
  }
}

/** OpenSSL's or Node's code of a TLS failure: it names the failure, never the material. */
export const codeOf = (error: unknown): string => {
  const code = (error as { readonly code?: unknown } | undefined)?.code
  return typeof code === "string" ? code : "TLS_ERROR"
}

/**
 * OpenSSL's and Node's codes of a certificate refused in the handshake: this runner's check of the
 * port's (not of the cluster CA, expired, naming another host), or a TLS peer's alert refusing this
 * runner's (`…ALERT_UNKNOWN_CA`, `…ALERT_BAD_CERTIFICATE`: a proxy that ends TLS before the port).
 *
 * A runner's port (Node) refuses this runner's certificate with no alert: OpenSSL takes any
 * certificate, Node checks it once OpenSSL's handshake is done and only closes the connection —
 * over TLS 1.3 after this side's handshake is done (Node 20: `secureConnect`, then a clean end with
 * no byte), over TLS 1.2 within it (`ECONNRESET`). Only a client with no certificate at all gets an
 * alert (`ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED`), and a runner always has one. That close
 * looks like a port that evicted the connection or was closing (`RunnerPort`), so it is tried
 * again as a busy port's is, then fails; the port's log names the check's code
 * (`UNABLE_TO_VERIFY_LEAF_SIGNATURE`, `CERT_HAS_EXPIRED`).
 */
const certificateCode = /CERT|UNABLE_TO_(GET_ISSUER|VERIFY|DECRYPT)|SELF_SIGNED|ALTNAME|UNKNOWN_CA|HOSTNAME_MISMATCH|INVALID_CA|INVALID_PURPOSE/

/** Whether a TLS failure is a certificate refused (`certificateCode`): one that the next connection gets again. */
const isCertificateFailure = (error: unknown): boolean => certificateCode.test(codeOf(error))

/**
 * A connection to another runner failed on a certificate refused in the TLS handshake
 * (`certificateCode`). A wrong certificate does not become right by connecting again (the
 * failure is not retried, unlike a port that is busy or restarting); the next call connects anew,
 * after a rotation (`Reloadable`) too. Names the peer's address and the code, never the material.
 */
export class CertificateRefused extends Schema.TaggedError<CertificateRefused>()("CertificateRefused", {
  peer: Schema.String,
  code: Schema.String
}) {
  override get message(): string {
    return `The TLS certificate check with the runner at ${this.peer} failed (${this.code}): every runner of the cluster needs a certificate of the cluster CA, for the address it is reached at; not tried again`
  }
}

const asBuffer = (pem: string | Uint8Array) => typeof pem === "string" ? pem : Buffer.from(pem)

/** Node's TLS options of `tls`, shared by both sides. */
const material = (tls: RunnerTls) => ({
  cert: asBuffer(tls.certificate),
  key: asBuffer(Redacted.value(tls.key)),
  ca: asBuffer(tls.ca),
  minVersion
} as const)

/** One input parsed on its own: a failure names it. */
const parsed = <A>(input: Input, parse: () => A) => Effect.try({ try: parse, catch: (error) => new InvalidTls({ code: codeOf(error), input }) })

/**
 * Checks the material once, at start, input by input: the certificate, the key and the CA each parse
 * (OpenSSL alone skips a CA that holds no certificate, and every handshake would fail later), the key
 * is the certificate's, then a TLS context builds from the three (what is left for OpenSSL to refuse).
 */
export const check = (tls: RunnerTls): Effect.Effect<void, InvalidTls> =>
  Effect.gen(function*() {
    const options = material(tls)
    const certificate = yield* parsed("certificate", () => new X509Certificate(options.cert))
    const key = yield* parsed("key", () => createPrivateKey(options.key))
    yield* parsed("ca", () => new X509Certificate(options.ca))
    if (!certificate.checkPrivateKey(key)) return yield* new InvalidTls({ code: keyMismatch, input: "key" })
    yield* Effect.try({ try: () => Tls.createSecureContext(options), catch: (error) => new InvalidTls({ code: codeOf(error) }) })
  })

/**
 * A log line for failures that repeat: the first of a key at once, then at most one per `logEvery`
 * saying how many more there were.
 */
export const throttled = (every: Duration.Duration = logEvery) => {
  const seen = new Map<string, { last: number; more: number }>()
  return (key: string, line: string): Effect.Effect<void> =>
    // Monotonic time on the Clock: the wall clock stepped back an hour kept every key quiet an hour.
    Effect.flatMap(MonotonicTime.millis, (now) => {
      const entry = seen.get(key)
      if (entry !== undefined && now - entry.last < Duration.toMillis(every)) {
        entry.more++
        return Effect.void
      }
      const more = entry?.more ?? 0
      seen.set(key, { last: now, more: 0 })
      // Old keys go: a flood from many addresses keeps the map small.
      if (seen.size > 1024) {
        for (const [old, value] of seen) if (now - value.last >= Duration.toMillis(every)) seen.delete(old)
      }
      return Effect.logWarning(more === 0 ? line : `${line} (and ${more} more since)`)
    })
}

/** A connection's place in the TLS handshake of a port (see `RunnerPort.pending`): it enters at once, and leaves once secure or closed. */
export type Admission = (source: string, evict: () => void) => () => void

/**
 * The runners' port over TLS, listening at `listen`: a `SocketServer` (as `NodeSocketServer.make`
 * is one) whose sockets are its connections once their TLS handshake is done, with a client
 * certificate of the cluster CA. A connection whose handshake fails (no certificate, another CA's,
 * not TLS) is closed without a byte of the protocol, and logged. The handshake has `handshakeTimeout`,
 * and at most as many connections are in it at once as the admission of the port it listens on
 * (`admissionOf`) holds.
 */
export const server = (
  tls: RunnerTls,
  listen: { readonly host: string; readonly port: number },
  handshakeTimeout: Duration.Duration,
  admissionOf: (port: number) => Admission
): Effect.Effect<SocketServer.SocketServer["Type"], SocketServer.SocketServerError, Scope.Scope> =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const failed = yield* Deferred.make<never, Error>()
    const log = throttled()
    const waiting: Array<Tls.TLSSocket> = []
    let onSecure = (socket: Tls.TLSSocket): void => void waiting.push(socket)
    const net = Tls.createServer({
      ...material(tls),
      requestCert: true,
      rejectUnauthorized: true,
      handshakeTimeout: Duration.toMillis(handshakeTimeout),
      noDelay: true
    }, (socket) => onSecure(socket))
    // Replaced material (`Reloadable`): the connections accepted from now on are made with it. It
    // was checked before; a context that still fails to build keeps the one before, and says so.
    if (isReloadable(tls)) {
      const stop = tls.onReplaced(() => {
        try {
          net.setSecureContext(material(tls))
        } catch (error) {
          Runtime.runFork(runtime)(Effect.logError(`the runners' port kept its TLS certificate: the new one cannot be used (${codeOf(error)})`))
        }
      })
      yield* Effect.addFinalizer(() => Effect.sync(stop))
    }
    // A connection's place in the handshake, by its peer's address and port (the TLS socket's are its raw socket's).
    const inHandshake = new Map<string, () => void>()
    const peer = (socket: { readonly remoteAddress?: string | undefined; readonly remotePort?: number | undefined }) => `${socket.remoteAddress ?? ""}:${socket.remotePort ?? ""}`
    const leave = (key: string) => {
      inHandshake.get(key)?.()
      inHandshake.delete(key)
    }
    // The port is known once listening (it may be 0 until then); no connection arrives before.
    let admission: Admission = () => () => {}
    net.on("connection", (raw) => {
      const key = peer(raw)
      inHandshake.set(key, admission(raw.remoteAddress ?? "", () => raw.destroy()))
      raw.once("close", () => leave(key))
    })
    net.on("secureConnection", (socket) => leave(peer(socket)))
    net.on("tlsClientError", (error, socket) => {
      // Read before the socket is destroyed: its address may not be known after.
      const key = peer(socket)
      const from = socket.remoteAddress
      // A certificate OpenSSL took but Node's check refused (another CA's, expired) is refused with no
      // alert: Node closes the socket, and the error is the close's (`ECONNRESET`); the check's own
      // code is on the socket.
      const code = socket.authorizationError === undefined || socket.authorizationError === null ? codeOf(error) : String(socket.authorizationError)
      // With a listener here Node leaves the connection open (a handshake timed out too): closed now.
      socket.destroy()
      leave(key)
      Runtime.runFork(runtime)(
        log(from ?? "", `the runners' port refused a connection from ${from ?? "an unknown address"} in the TLS handshake (${code}): every runner of the cluster needs TLS with a certificate of the cluster CA`)
      )
    })
    net.on("error", (error) => Deferred.unsafeDone(failed, Exit.fail(error)))
    yield* Effect.addFinalizer(() => Effect.async<void>((resume) => void net.close(() => resume(Effect.void))))
    yield* Effect.async<void>((resume) => void net.listen({ host: listen.host, port: listen.port }, () => resume(Effect.void))).pipe(
      Effect.raceFirst(Effect.mapError(Deferred.await(failed), (cause) => new SocketServer.SocketServerError({ reason: "Open", cause })))
    )
    const run = <R, E, _>(handler: (socket: Socket.Socket) => Effect.Effect<_, E, R>) =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const fibers = yield* FiberSet.make().pipe(Scope.extend(scope))
        const fork = yield* FiberSet.runtime(fibers)<R>()
        const connected = (conn: Tls.TLSSocket) => {
          conn.on("error", () => {})
          const socket = NodeSocket.fromDuplex(
            Effect.acquireRelease(
              Effect.suspend(() => conn.closed ? Effect.fail(new Socket.SocketCloseError({ reason: "Close", code: 1000 })) : Effect.succeed(conn)),
              (conn) => Effect.sync(() => conn.closed ? undefined : conn.destroySoon())
            )
          )
          fork(socket.pipe(
            Effect.flatMap(handler),
            Effect.catchAllCause(() => Effect.void),
            Effect.provideService(NodeSocket.NetSocket, conn)
          ))
        }
        return yield* Effect.async<never>(() => {
          const before = onSecure
          onSecure = connected
          waiting.splice(0).forEach(connected)
          return Effect.suspend(() => {
            onSecure = before
            return Scope.close(scope, Exit.void)
          })
        }).pipe(Effect.raceFirst(Effect.mapError(Deferred.await(failed), (cause) => new SocketServer.SocketServerError({ reason: "Unknown", cause }))))
      })
    const address = net.address()
    admission = admissionOf(typeof address === "object" && address !== null ? address.port : 0)
    return SocketServer.SocketServer.of({
      address: typeof address === "string" || address === null
        ? { _tag: "UnixAddress", path: String(address) }
        : { _tag: "TcpAddress", hostname: address.address, port: address.port },
      run
    })
  })

/**
 * A socket to the runner at `address` over TLS: it opens once the TLS handshake is done, the
 * accepting runner's certificate checked against the cluster CA and `address.host`. A failed
 * handshake is a connection that did not open, and logged (`log`).
 */
export const connect = (
  tls: RunnerTls,
  address: RunnerAddress.RunnerAddress,
  options: { readonly openTimeout: Duration.DurationInput; readonly log: (key: string, line: string) => Effect.Effect<void> }
): Effect.Effect<Socket.Socket> =>
  NodeSocket.fromDuplex(
    Effect.scopeWith((scope) => {
      let conn: Tls.TLSSocket | undefined
      // Whether TCP connected: a failure before is a runner that is not there (not a TLS matter, nothing to log).
      let connected = false
      return Scope.addFinalizer(scope, Effect.sync(() => conn?.closed === false ? conn.destroySoon() : undefined)).pipe(
        Effect.zipRight(Effect.async<Tls.TLSSocket, unknown>((resume) => {
          conn = Tls.connect({
            ...material(tls),
            host: address.host,
            port: address.port,
            // SNI carries names only; `checkServerIdentity` checks the dialled host either way (an IP SAN for an address).
            ...(isIP(address.host) === 0 ? { servername: address.host } : {})
          })
          // No Nagle, as for the plaintext port: the handshake's and the protocol's small writes go out at once.
          conn.setNoDelay(true)
          conn.once("connect", () => {
            connected = true
          })
          conn.once("secureConnect", () => resume(Effect.succeed(conn!)))
          conn.on("error", (cause) => resume(Effect.fail(cause)))
        })),
        Effect.tapError((cause) =>
          connected
            ? options.log(
              `${address.host}:${address.port}`,
              `the TLS handshake with the runners' port ${address.host}:${address.port} failed (${codeOf(cause)}): every runner of the cluster needs TLS with a certificate of the cluster CA, for the address it is reached at`
            )
            : Effect.void
        ),
        Effect.mapError((cause) =>
          new Socket.SocketGenericError({
            reason: "Open",
            cause: connected && isCertificateFailure(cause)
              ? new CertificateRefused({ peer: `${address.host}:${address.port}`, code: codeOf(cause) })
              : new Error(connected ? `the TLS handshake with the runners' port failed (${codeOf(cause)})` : `connecting to the runners' port failed (${codeOf(cause)})`)
          })
        )
      )
    }),
    { openTimeout: options.openTimeout }
  )
