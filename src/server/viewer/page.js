// The effect-agent session viewer's page: one ES module, bundled with the domain's fold of the log
// (`SessionView`, through ./viewer.ts) by `npm run build` into dist/server/viewer/page.bundle.js,
// which the server sends as /viewer.js. Nothing is built while the server runs.
//
// The view is `fold(events)`, a pure function of the events, so the view of the whole log and the
// view "as of" sequence N (the timeline) are the same function applied to a prefix.
//
// Live events come from /live (SSE), read with fetch (./liveStream.js: every read sends the page's
// key, which EventSource cannot). Every event carries its sequence: the page keeps only event n + 1
// after event n — anything at or below the last one shown is a duplicate and skipped; anything
// beyond n + 1 is a gap and the stream is reopened from n. When the stream ends (a dropped
// connection, a server restart) the page reopens it with ?after=n, so neither loses or repeats events.

import { follow } from "./liveStream.js"
import { diffNode, editDiff, markdownNode, markdownParses, rendered, terminalNode } from "./rich.js"
import { empty, finishText, fold, openCalls, phase, shownField, step, totalsText, turnText, visible } from "./viewer.js"

const $ = (id) => document.getElementById(id)
const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag)
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value
    else if (key.startsWith("data-")) node.setAttribute(key, value)
    else if (key === "onclick") node.addEventListener("click", value)
    else node[key] = value
  }
  for (const child of children) if (child !== undefined && child !== null) node.append(child)
  return node
}
// An image the log names, from the authenticated route that serves only this session's images (never by URL from the log).
// Fetched with the page's key (an <img src> cannot send it) once it comes near the screen, and shown
// from a blob: URL kept while the session is open: a render of the timeline draws it again at once.
// `imageCache`: the open session's images, blob → a promise of its URL; replaced, its URLs revoked,
// when a session is opened.
let imageCache = { sessionId: undefined, urls: new Map(), closed: false }
const imageUrl = (cache, blob) => {
  let url = cache.urls.get(blob)
  if (url === undefined) {
    url = read(`/sessions/${encodeURIComponent(cache.sessionId)}/blobs/${encodeURIComponent(blob)}`)
      .then((response) => response.ok ? response.blob() : Promise.reject(new Error(`HTTP ${response.status}`)))
      .then((bytes) => cache.closed ? undefined : URL.createObjectURL(bytes))
    // One that failed is asked again when it is drawn again.
    url.catch(() => { if (cache.urls.get(blob) === url) cache.urls.delete(blob) })
    cache.urls.set(blob, url)
  }
  return url
}
const openImages = (sessionId) => {
  imageCache.closed = true
  for (const url of imageCache.urls.values()) url.then((href) => href === undefined || URL.revokeObjectURL(href), () => {})
  imageCache = { sessionId, urls: new Map(), closed: false }
}
// Each image drawn and not loaded yet: what loads it. Watched while it is in the document (see `watchImages`).
const imageLoads = new WeakMap()
const nearScreen = new IntersectionObserver((entries) => {
  for (const entry of entries) {
    if (!entry.isIntersecting) continue
    nearScreen.unobserve(entry.target)
    imageLoads.get(entry.target)?.()
  }
}, { rootMargin: "400px" })
const watchImages = (parent) => {
  nearScreen.disconnect()
  for (const node of parent.querySelectorAll("img[data-blob]:not([src])")) nearScreen.observe(node)
}
const images = (refs) =>
  refs === undefined || refs.length === 0 ? undefined : el("div", { class: "images" }, ...refs.map((image) => {
    const node = el("img", { alt: `${image.mediaType}, ${image.bytes} bytes`, title: `${image.mediaType}, ${image.bytes} bytes`, "data-blob": image.blob })
    const cache = imageCache
    imageLoads.set(node, () => imageUrl(cache, image.blob).then((href) => { if (href !== undefined) node.src = href }, () => {}))
    return node
  }))
// A call's arguments or result as text, its bidi and invisible characters escaped (`visible`).
const show = (value) => visible(raw(value))
const raw = (value) => typeof value === "string" ? value : JSON.stringify(value, null, 2)

// `running`: a turn is open in the live view (Send steers it, a follow-up can be queued); `idle`: no turn, no compaction (compact, fork).
// `pendingSteers`: steers sent and not yet seen stored (the engine stores a steer at the turn's next step), shown meanwhile.
const state = { sessionId: undefined, events: [], stopLive: undefined, scrubAt: undefined, scheduled: false, retry: undefined, running: false, idle: false, pendingSteers: [], shown: undefined }

// What the session pane draws of a heavy log (a session of 20,000 turns, a turn of 5,000 calls, a
// 10 MB answer or tool output: drawn whole, opening one held the tab for seconds and kept 45,000
// nodes): the latest `turns` turns and lines, the latest `items` items of each turn, the first
// `characters` of a text, the first `lines` lines of an edit's diff — each with a button that shows more, so every event stays reachable.
// `shown` holds what the user asked to see of the open session.
const bounds = { turns: 50, items: 200, characters: 100_000, lines: 2_000 }
const freshShown = () => ({ turns: bounds.turns, items: new Map(), whole: new Set(), redraw: new Set(), earlier: undefined })
// `redraw`: the turns kept drawn that show more now (more of their items, a whole text), drawn again once.
// `earlier`: the "Show earlier" line drawn last, and the number of turns it names.
const showMore = (change) => (event) => {
  change(state.shown)
  const turn = event.target.closest("[data-turn]")?.dataset.turn
  if (turn !== undefined) state.shown.redraw.add(turn)
  render()
}
const moreButton = (kind, text, change) => el("button", { class: "more", "data-more": kind, textContent: text, onclick: showMore(change) })
// A text of at most `bounds.characters` unless the user asked for all of it (`key` names it): the
// text to show, and the button that shows the rest.
const bounded = (key, text) => {
  if (text.length <= bounds.characters || state.shown.whole.has(key)) return { text, more: undefined }
  return { text: text.slice(0, bounds.characters), more: moreButton("text", `Show all ${text.length.toLocaleString("en")} characters`, (shown) => shown.whole.add(key)) }
}
// A bounded text as a node of `className` (set as text), its button after it.
const boundedNode = (key, text, className) => {
  const { text: part, more } = bounded(key, text)
  return el("div", { class: className, textContent: visible(part) }, more)
}

// The page's key (see the server's Security.pageKey): every request the page makes carries it — the
// server refuses the viewer's cookie without it, reads included. The sign-in hands it over in the
// fragment of the URL it opens the viewer at (or the sign-in form keeps it); it is kept in this
// origin's storage — per port, where the cookie is per host — and taken out of the address bar at once.
const pageKeyItem = "effect-agent-page-key"
const pageKey = () => localStorage.getItem(pageKeyItem) ?? ""
// A key in the fragment is kept only once a read with it is answered: any page of this site — a
// server on another port of 127.0.0.1, whose navigation carries the viewer's cookie — can open the
// viewer at /#key=…, and a key kept unchecked replaced the page's own and signed the viewer out.
const keyChecked = (() => {
  if (!location.hash.startsWith("#key=")) return Promise.resolve()
  const offered = location.hash.slice("#key=".length)
  history.replaceState(null, "", location.pathname + location.search)
  return fetch("/sessions?limit=1", { credentials: "same-origin", headers: { "x-effect-agent-key": offered } })
    .then((response) => { if (response.ok) localStorage.setItem(pageKeyItem, offered) }, () => {})
})()

// Signed out (the token changed, the cookie is gone, or this page holds no key — one opened before
// reads needed it): back to the sign-in form, which hands out both.
const signedOut = (response) => {
  if (response.status === 401) location.assign("/login")
  return response
}

// Every request waits for the fragment's key to be checked: the page is usable before it is answered,
// and a session started meanwhile went without a key, was refused and signed the viewer out.
/** A GET of the page's own origin, with its key. */
const read = (path) =>
  keyChecked.then(() => fetch(path, { credentials: "same-origin", headers: { "x-effect-agent-key": pageKey() } })).then(signedOut)

const api = async (method, path, body) => {
  await keyChecked
  const headers = { "x-effect-agent-key": pageKey() }
  if (body !== undefined) headers["content-type"] = "application/json"
  const response = await fetch(path, {
    method,
    credentials: "same-origin",
    headers,
    body: body === undefined ? undefined : JSON.stringify(body)
  }).then(signedOut)
  const text = await response.text()
  const data = text === "" ? undefined : JSON.parse(text)
  if (!response.ok) throw Object.assign(new Error(data?.message ?? `HTTP ${response.status}`), { body: data })
  return data
}
const report = (error) => setStatus("error", error.message)

// The whole text in the title too: a narrow header may cut it.
const setStatus = (kind, text) => { $("status").dataset.state = kind; $("status").textContent = text; $("status").title = text }

// The list is narrowed by the server (`?search=`, `?cwd=`), from the two boxes above it, and holds the
// `shownSessions` most recently active of what they match until "Show all" (a data dir of 10,000
// sessions is about 2 MB of listing and 10,000 entries to draw, on every turn's start and end).
const shownSessions = 200
const filterQuery = () => {
  const query = new URLSearchParams()
  const search = $("search").value.trim()
  const cwd = $("filter-cwd").value.trim()
  if (search !== "") query.set("search", search)
  if (cwd !== "") query.set("cwd", cwd)
  return query
}
// Titles and paths are text from the log (a model's or a user's words): set as textContent, never as markup.
const sessionRow = (s) =>
  el("li", { class: s.sessionId === state.sessionId ? "current" : "", "data-session": s.sessionId, title: s.title ?? s.sessionId, onclick: () => openSession(s.sessionId) },
    el("div", { class: "title", textContent: s.title ?? "" }),
    el("div", { class: "id", textContent: s.sessionId }),
    el("div", { class: "meta", textContent: `${s.turnCount} turn${s.turnCount === 1 ? "" : "s"} · ${new Date(s.lastActivityAt).toLocaleString()} · ${s.cwd}` }),
    // What the session used and cost, from the listing (every store keeps the totals).
    s.usage === undefined ? undefined : el("div", { class: "meta", "data-totals": s.sessionId, textContent: totalsText(s) }))
const loadSessions = async () => {
  const query = filterQuery()
  const filtered = query.toString() !== ""
  // One more than is shown: whether there are more to show.
  if (!listing.all) query.set("limit", String(shownSessions + 1))
  const answered = await api("GET", `/sessions?${query}`)
  const more = !listing.all && answered.length > shownSessions
  const sessions = more ? answered.slice(0, shownSessions) : answered
  const list = $("sessions")
  listing.rows = new Map(sessions.map((s) => [s.sessionId, { ...s }]))
  list.replaceChildren(...sessions.map(sessionRow))
  if (more) {
    list.append(el("li", { class: "empty", "data-more": "sessions" },
      el("button", { textContent: `Show all — these are the ${shownSessions} most recent`, onclick: () => { listing.all = true; refreshSessions() } })))
  }
  if (sessions.length === 0) list.append(el("li", { class: "empty", "data-empty": "sessions", textContent: filtered ? "No session matches." : "No sessions yet." }))
}

// One listing in flight at a time: what asks for the list while one loads (typing in the filters,
// a session not listed changing) asks for one more after it, not one each. `all`: "Show all" was
// pressed. `rows`: the summaries listed, by session id, as the open session's events keep them.
const listing = { loading: false, again: false, all: false, rows: new Map() }
const refreshSessions = () => {
  if (listing.loading) {
    listing.again = true
    return
  }
  listing.loading = true
  loadSessions().catch(report).finally(() => {
    listing.loading = false
    if (listing.again) {
      listing.again = false
      refreshSessions()
    }
  })
}

// Exactly once, in order: see the module's note.
const receive = (event) => {
  if (event.sessionId !== state.sessionId) return
  const last = state.events.length
  if (event.sequence <= last) return
  if (event.sequence !== last + 1) return reconnect()
  state.events.push(event)
  // The list's turn counts, activity and titles follow the session live.
  if (event.type === "turn.completed" || event.type === "turn.started" || event.type === "session.titled") followListed(event)
  schedule()
}

// The open session's row follows its events without asking for the listing again (each listing reads
// every session's summary: 1.5 s with 7,100 sessions, in every tab, at each turn's start and end).
// What the listing already counts (its `lastSequence`: the history arriving when a session opens)
// changes nothing; a later event redraws the row from the page's own fold — turns, activity, title,
// totals, as the listing sums them — and puts it first, the most recently active. The listing is
// asked for only when the session is not listed, or when a new title may change what the search keeps.
const followListed = (event) => {
  const listed = listing.rows.get(event.sessionId)
  const row = listed === undefined ? null : $("sessions").querySelector(`[data-session="${CSS.escape(event.sessionId)}"]`)
  if (row === null || (event.type === "session.titled" && filterQuery().has("search"))) return refreshSessions()
  if (event.sequence <= listed.lastSequence) return
  const view = liveView()
  listed.lastSequence = event.sequence
  listed.lastActivityAt = event.timestamp
  if (event.type === "turn.started") listed.turnCount++
  if (view.title !== undefined) listed.title = view.title
  if (view.totals !== undefined) {
    const { cacheReadTokens, cacheWriteTokens, cost, costUnknown, inputTokens, outputTokens } = view.totals
    // The cache counts as the listing has them: absent until some were reported.
    const usage = { inputTokens, outputTokens }
    if (cacheReadTokens > 0 || listed.usage?.cacheReadTokens !== undefined) usage.cacheReadTokens = cacheReadTokens
    if (cacheWriteTokens > 0 || listed.usage?.cacheWriteTokens !== undefined) usage.cacheWriteTokens = cacheWriteTokens
    Object.assign(listed, { usage, cost, costUnknown })
  }
  const fresh = sessionRow(listed)
  row.remove()
  $("sessions").prepend(fresh)
}

const connect = () => {
  state.stopLive?.()
  clearTimeout(state.retry)
  // Every event's data is the stored event, whatever its SSE name (its type, or none for types newer than this page).
  const stop = follow(`/sessions/${encodeURIComponent(state.sessionId)}/live?after=${state.events.length}`, pageKey(), {
    onOpen: () => setStatus("live", "live"),
    onEvent: (message) => receive(JSON.parse(message.data)),
    onEnd: (status) => {
      if (status === 401) return location.assign("/login")
      // The connection dropped (the server went away, or answered an error): reopen from the last event shown.
      setStatus("reconnecting", "reconnecting…")
      state.retry = setTimeout(() => { if (state.stopLive === stop) connect() }, 1000)
    }
  })
  state.stopLive = stop
}
const reconnect = () => connect()

const openSession = (sessionId) => {
  drawer(false)
  state.sessionId = sessionId
  state.events = []
  openImages(sessionId)
  liveFold.view = empty()
  liveFold.folded = 0
  state.shown = freshShown()
  state.scrubAt = undefined
  location.hash = sessionId
  $("title").textContent = sessionId
  $("title").className = ""
  $("name").textContent = ""
  $("rename").hidden = false
  renaming(false)
  $("message").disabled = false
  $("send").disabled = false
  connect()
  schedule()
  refreshSessions()
}

// A render that took long (a long session, a long answer) is not repeated on the very next frame:
// the next waits four times as long first, so while events stream rendering takes at most about a
// fifth of the tab's time, and typing, scrolling and the connection go on in between.
const pacing = { end: 0, took: 0 }
const schedule = () => {
  if (state.scheduled) return
  state.scheduled = true
  const frame = () => requestAnimationFrame(() => {
    state.scheduled = false
    const start = performance.now()
    try {
      render()
    } finally {
      pacing.end = performance.now()
      pacing.took = pacing.end - start
    }
  })
  const wait = pacing.end + 4 * pacing.took - performance.now()
  if (wait > 0) setTimeout(frame, wait)
  else frame()
}

const decisionBadge = (d) => {
  const who = d.actor === "user" ? "you" : d.policy ? `policy: ${d.policy}` : "policy"
  const cls = d.decision === "allow" ? "ok" : d.decision === "deny" ? "bad" : "warn"
  return el("span", { class: `badge ${cls}`, textContent: `${d.decision} · ${who}` })
}

const sessionPath = () => `/sessions/${encodeURIComponent(state.sessionId)}`
// Drops the follow-ups the page shows (the server takes at most 1,000 at once): one another client
// queued after the page drew them stays queued.
const dropFollowUps = (queueIds) => () =>
  api("DELETE", `${sessionPath()}/followups?${queueIds.slice(0, 1000).map((id) => `queueId=${encodeURIComponent(id)}`).join("&")}`).catch(report)

const answer = (call, decision, remember, sessionId = state.sessionId) => () =>
  api("POST", `/sessions/${encodeURIComponent(sessionId)}/approvals/${encodeURIComponent(call.toolCallId)}`, { decision, remember }).catch(report)

// A task call's subagent, nested under it: its session (a link that opens it), its task, what its
// tree used so far, how it ended — and, live, its call waiting for the user, answered on its session.
const renderSubagent = (subagent, live) => {
  const link = el("a", { href: `#${encodeURIComponent(subagent.childSessionId)}`, class: "subagent-link", textContent: subagent.childSessionId, onclick: (e) => { e.preventDefault(); openSession(subagent.childSessionId) } })
  const node = el("div", { class: "subagent", "data-subagent": subagent.childSessionId },
    el("div", { class: "head" }, el("strong", { textContent: "subagent" }), link, el("span", { class: "badge", textContent: subagent.mode === "readOnly" ? "read-only" : "inherits permissions" }),
      subagent.outcome === undefined ? undefined : el("span", { class: `badge ${subagent.outcome === "final" ? "ok" : "bad"}`, textContent: subagent.outcome })),
    el("div", { class: "args", textContent: visible(subagent.description) }))
  if (subagent.used !== undefined) node.append(el("div", { class: "note", "data-event": "subagent.progress", textContent: subagent.used }))
  if (live && subagent.asking !== undefined) {
    const asking = subagent.asking
    // What Allow runs, shown as the subagent's own page shows its call (the tool's name alone let a
    // command be approved unseen).
    node.append(el("div", { class: "approval", "data-asking": asking.toolCallId },
      el("span", { textContent: `asks: ${visible(asking.tool)} (${asking.risk}) ` }),
      callBody({ tool: asking.tool, args: asking.args, status: "awaiting_approval" }),
      asksNode(asking),
      el("button", { class: "allow", textContent: "Allow", "data-action": "allow", onclick: answer(asking, "allow", false, subagent.childSessionId) }),
      el("button", { class: "deny", textContent: "Deny", "data-action": "deny", onclick: answer(asking, "deny", false, subagent.childSessionId) })))
  }
  return node
}

// The arguments that say what a call touches, shown first: a path or a command under 10 KB of
// other arguments sat below the fold of their 160 px box, next to Allow.
const keyArgs = ["path", "file_path", "command", "url", "cwd", "pattern"]
const keyFields = (args) =>
  args !== null && typeof args === "object" ? keyArgs.filter((key) => typeof args[key] === "string").map((key) => [key, args[key]]) : []
// Arguments past this many characters (once the key fields are out) are folded under a <details>.
const foldedArgs = 1000
// What an approval is for, beside its buttons: the tool (an MCP tool's server and tool) and its key
// fields, escaped like the call — in a long edit or a big argument object they were out of sight.
const asksNode = (call) => {
  const mcp = /^mcp__(.+?)__(.+)$/.exec(call.tool)
  const fields = [...(mcp === null ? [["tool", call.tool]] : [["server", mcp[1]], ["tool", mcp[2]]]), ...keyFields(call.args)]
  return el("div", { class: "asks", "data-asks": call.toolCallId }, ...fields.map(([key, value]) => el("div", { "data-field": key, textContent: `${key}: ${shownField(value)}` })))
}

// Each edit's diff and its drawn block, made once per call's arguments (the log's own object, the
// same in every fold of it) and kept while the fold holds them: the open turn is drawn again at each
// render, and scrubbing draws every shown turn at each position — one 30,000-line `write_file`
// waiting for approval was diffed and drawn anew at each (a rename of the session: 12–33 s of this
// tab, the Allow beside it unusable). At most `bounds.lines` lines (and `bounds.characters`
// characters) are drawn, with a button that draws the rest.
const diffs = new WeakMap()
const diffing = { runs: 0 }
const diffOf = (call) => {
  if (call.args === null || typeof call.args !== "object") return undefined
  let kept = diffs.get(call.args)
  if (kept === undefined) {
    diffing.runs++
    diffs.set(call.args, kept = { entries: editDiff(call.tool, call.args), whole: undefined, node: undefined })
  }
  if (kept.entries === undefined) return undefined
  const key = `${call.toolCallId}:diff`
  const whole = state.shown.whole.has(key)
  if (kept.node === undefined || kept.whole !== whole) {
    const { entries, more } = boundedLines(kept.entries, whole, key)
    kept.node = diffNode(call.args.path, entries)
    if (more !== undefined) kept.node.append(more)
    kept.whole = whole
  }
  return kept.node
}
// The first lines of a diff, at most `bounds.lines` of them and `bounds.characters` characters,
// unless the user asked for all of it: the lines to draw, and the button that draws the rest.
const boundedLines = (entries, whole, key) => {
  if (whole) return { entries, more: undefined }
  let shown = 0
  for (let characters = 0; shown < entries.length && shown < bounds.lines; shown++) {
    characters += entries[shown].text.length + 1
    if (characters > bounds.characters) break
  }
  if (shown === entries.length) return { entries, more: undefined }
  const part = shown === 0 ? [{ ...entries[0], text: entries[0].text.slice(0, bounds.characters) }] : entries.slice(0, shown)
  return { entries: part, more: moreButton("text", `Show all ${entries.length.toLocaleString("en")} lines`, (all) => all.whole.add(key)) }
}

// What a call does, as a user reads it: an edit as its diff, a command as a terminal block, anything
// else as its arguments, the key fields first and a long rest folded.
const callBody = (call) => {
  const diff = diffOf(call)
  if (diff !== undefined) return diff
  if (call.tool === "shell" && typeof call.args?.command === "string") {
    const output = call.status === "completed" ? bounded(`${call.toolCallId}:result`, raw(call.result)) : call.status === "running" && call.progress ? bounded(`${call.toolCallId}:progress`, call.progress) : undefined
    const node = terminalNode(call.args.command, output?.text, call.status === "completed" ? call.exitCode : undefined)
    if (output?.more !== undefined) node.append(output.more)
    return node
  }
  const fields = keyFields(call.args)
  if (fields.length === 0) return boundedNode(`${call.toolCallId}:args`, raw(call.args), "args")
  const rest = Object.fromEntries(Object.entries(call.args).filter(([key]) => !keyArgs.includes(key)))
  const restText = Object.keys(rest).length === 0 ? undefined : raw(rest)
  return el("div", { class: "args" }, ...fields.map(([key, value]) => el("div", { class: "field", "data-field": key, textContent: `${key}: ${shownField(value)}` })),
    restText === undefined || restText.length <= foldedArgs ? visible(restText ?? "")
      : el("details", {}, el("summary", { textContent: `the other arguments (${restText.length.toLocaleString("en")} characters)` }), boundedNode(`${call.toolCallId}:args`, restText, "rest")))
}

const renderCall = (call, live) => {
  const status = el("span", { class: `badge ${call.status === "completed" ? "ok" : call.status === "failed" || call.status === "denied" ? "bad" : "warn"}`, textContent: call.status.replace("_", " ") })
  const node = el("div", { class: "call", "data-call": call.toolCallId, "data-status": call.status, "data-tool": call.tool },
    el("div", { class: "head" }, el("strong", { textContent: visible(call.tool) }), status, call.risk ? el("span", { class: "badge", textContent: call.risk }) : undefined, ...call.decisions.map(decisionBadge)),
    callBody(call))
  const terminal = call.tool === "shell" && typeof call.args?.command === "string"
  if (!terminal && call.progress && call.status === "running") node.append(boundedNode(`${call.toolCallId}:progress`, call.progress, "result"))
  if (!terminal && call.status === "completed") node.append(boundedNode(`${call.toolCallId}:result`, raw(call.result) + (call.exitCode === undefined ? "" : `\n(exit ${call.exitCode})`), "result"))
  if (call.status === "completed" && call.images !== undefined) node.append(images(call.images))
  if (call.status === "failed") node.append(el("div", { class: "result", textContent: visible(`${call.errorCode}: ${call.message}`) }))
  if (call.subagent !== undefined) node.append(renderSubagent(call.subagent, live))
  if (live && call.status === "awaiting_approval") {
    node.append(el("div", { class: "approval" }, asksNode(call),
      el("button", { class: "allow", textContent: "Allow", "data-action": "allow", onclick: answer(call, "allow", false) }),
      el("button", { class: "allow", textContent: "Always allow", "data-action": "always", onclick: answer(call, "allow", true) }),
      el("button", { class: "deny", textContent: "Deny", "data-action": "deny", onclick: answer(call, "deny", false) })))
  }
  return node
}

const renderNote = (item) => {
  const node = el("div", { class: "note", ...(item.event === undefined ? {} : { "data-event": item.event }), textContent: item.text })
  if (item.detail !== undefined) node.append(el("details", {}, el("summary", { textContent: "summary" }), el("div", { class: "detail", textContent: item.detail })))
  return node
}

// The steers sent to this turn that it has not stored yet: each stored steer settles the oldest pending one of its text.
const pendingSteersOf = (turn) => {
  const stored = turn.items.filter((item) => item.kind === "steer").map((item) => item.text)
  state.pendingSteers = state.pendingSteers.filter((pending) => {
    if (pending.turnId !== turn.turnId) return false
    if (pending.seen < stored.length && stored.slice(pending.seen).includes(pending.text)) return false
    return true
  })
  if (state.pendingSteers.length === 0) return undefined
  return el("div", { class: "pending-steers" }, ...state.pendingSteers.map((pending) =>
    el("div", { class: "steer pending", "data-pending": "steer", textContent: `steering: ${pending.text} — sent; the model reads it at its next step` })))
}

// The instructions files of the last turn's prompt: which, from where, and what they cost.
const instructionsText = (parts) =>
  parts === undefined ? "—" : parts.length === 0 ? "none"
    : parts.map((p) => `${p.path} (${p.source === "user-file" ? "yours" : "project"}, ${p.tokens} tokens${p.truncated ? ", cut" : ""})`).join(" · ")

const endText = (end) => end.stopReason === "final" ? `turn ended: final${finishText(end) === undefined ? "" : ` — ${finishText(end)}`}` : end.stopReason === "cancelled" ? "turn ended: cancelled" : `turn ended: error (${end.errorCode ?? "unknown"})`

// The view of every event received, folded as they arrive (the fold changes its view in place, so
// folding the new events into it is the fold of all of them): a render while events stream folds only
// what is new. A view "as of" an earlier event (the timeline) is folded from the start.
const liveFold = { view: empty(), folded: 0 }
const liveView = () => {
  for (; liveFold.folded < state.events.length; liveFold.folded++) {
    folding.steps++
    step(liveFold.view, state.events[liveFold.folded])
  }
  return liveFold.view
}
// The view as of an earlier event (the timeline), kept: dragging the timeline forward folds the events
// it passes, and a render while it stays put (a live event arrived) folds none. Every such render
// folded the whole prefix again (145,000 events: each step of a drag, each event streamed meanwhile).
// Dragged back, it is folded from the start (the fold changes its view in place: no copy to go back to).
const scrubFold = { events: undefined, view: undefined, folded: 0 }
const viewAsOf = (at) => {
  if (scrubFold.events !== state.events || scrubFold.folded > at) Object.assign(scrubFold, { events: state.events, view: empty(), folded: 0 })
  for (; scrubFold.folded < at; scrubFold.folded++) {
    folding.steps++
    step(scrubFold.view, state.events[scrubFold.folded])
  }
  return scrubFold.view
}
// How many events the page has folded since it opened (for tests and the curious).
const folding = { steps: 0 }

// The live view's turns that have ended and its lines between turns, each drawn once and kept (by
// the view's own object, for as long as the view holds it): a turn that has ended changes only when a
// rewind abandons it or takes it back, a line never. So while a turn streams, a render draws that turn
// alone, and a long session's earlier turns stay in the document as they are — a selection in them too.
const drawn = new WeakMap()
const drawnOnce = (item, draw) => {
  let node = drawn.get(item)
  if (node === undefined) drawn.set(item, node = draw(item))
  return node
}
const drawnTurn = (turn, draw) => {
  if (turn.end === undefined) return draw(turn)
  const kept = drawn.get(turn)
  // Drawn again when the user asked to see more of the session (an earlier item, a whole text).
  if (kept !== undefined && kept.abandoned === turn.abandoned && !state.shown.redraw.delete(turn.turnId)) return kept.node
  const node = draw(turn)
  drawn.set(turn, { node, abandoned: turn.abandoned })
  return node
}

// Makes `nodes` the children of `parent`, moving only what is not in its place already: a node kept
// across renders is not taken out of the document. What leaves goes first: a node inserted before
// one about to leave (a new "Show earlier" line before the old one) moved every kept node after it,
// each render, and each move relaid out the whole list.
const place = (parent, nodes) => {
  const wanted = new Set(nodes)
  for (let at = parent.firstChild; at !== null;) {
    const next = at.nextSibling
    if (!wanted.has(at)) at.remove()
    at = next
  }
  let at = parent.firstChild
  for (const node of nodes) {
    if (node === at) at = at.nextSibling
    else parent.insertBefore(node, at)
  }
}

// The live view's turns and session-level lines in log order, kept across renders: the fold only
// appends to both, each later in the log than what it holds, so a render adds what is new rather
// than sorting the whole session again (20,000 turns: every streamed delta sorted them all).
const liveTimeline = { view: undefined, turns: 0, notes: 0, entries: [] }
// An entry: `{ at, turn }` or `{ at, note }`.
const timelineEntries = (turns, notes) =>
  [...turns.map((turn) => ({ at: turn.startedAt, turn })), ...notes.map((note) => ({ at: note.sequence, note }))].sort((a, b) => a.at - b.at)
const liveTimelineOf = (view) => {
  if (liveTimeline.view !== view) Object.assign(liveTimeline, { view, turns: 0, notes: 0, entries: [] })
  if (liveTimeline.turns === view.turns.length && liveTimeline.notes === view.notes.length) return liveTimeline.entries
  const added = timelineEntries(view.turns.slice(liveTimeline.turns), view.notes.slice(liveTimeline.notes))
  liveTimeline.entries.push(...added)
  liveTimeline.turns = view.turns.length
  liveTimeline.notes = view.notes.length
  return liveTimeline.entries
}
// The line of "Show earlier" buttons, drawn again only when the number it names changes (a
// streamed delta left it as it was, and drawing it anew replaced it in the document each time).
const earlierLine = (earlier) => {
  if (state.shown.earlier?.count !== earlier) {
    state.shown.earlier = { count: earlier, node: el("p", { class: "more" },
      moreButton("turns", `Show ${Math.min(earlier, bounds.turns)} earlier`, (shown) => { shown.turns += bounds.turns }),
      moreButton("turns", `Show all (${earlier.toLocaleString("en")} not shown)`, (shown) => { shown.turns = Infinity })) }
  }
  return state.shown.earlier.node
}

const render = () => {
  if (state.sessionId === undefined) return
  const total = state.events.length
  const at = state.scrubAt === undefined ? total : Math.min(state.scrubAt, total)
  const live = at === total
  const view = live ? liveView() : viewAsOf(at)
  const main = $("view")
  const nearBottom = main.scrollHeight - main.scrollTop - main.clientHeight < 80
  const renderTurn = (turn) => {
    const hidden = Math.max(0, turn.items.length - (state.shown.items.get(turn.turnId) ?? bounds.items))
    return el("section", { class: turn.abandoned ? "turn abandoned" : "turn", "data-turn": turn.turnId, ...(turn.queueId === undefined ? {} : { "data-follow-up": turn.queueId }), ...(turn.abandoned ? { "data-abandoned": "true", title: "Rewound: on an abandoned branch, no longer in the conversation" } : {}) },
      el("div", { class: "user", textContent: turn.user }, images(turn.userImages)),
      el("div", { class: "body" },
        hidden === 0 ? undefined : moreButton("items", `Show ${Math.min(hidden, bounds.items)} earlier of this turn's ${turn.items.length} items`,
          (shown) => shown.items.set(turn.turnId, turn.items.length - hidden + bounds.items)),
        ...turn.items.slice(hidden).map((item, index) =>
        item.kind === "text" ? (item.text.length <= bounds.characters ? markdownNode(item.text, "text markdown") : boundedNode(`${turn.turnId}:${hidden + index}`, item.text, "text"))
        // Thinking (extended thinking) folded away: what the model thought, not its answer.
        : item.kind === "thinking" ? el("details", { class: "thinking", "data-event": "model.thinking_delta" },
          el("summary", { textContent: `thinking (${item.text.length.toLocaleString("en")} characters)` }),
          boundedNode(`${turn.turnId}:${hidden + index}`, item.text, "thinking"))
        : item.kind === "call" ? renderCall(item, live)
        : item.kind === "steer" ? el("div", { class: "steer", "data-event": "turn.steered", textContent: `steered: ${item.text}` })
        : renderNote(item))),
      live && turn === view.openTurn ? pendingSteersOf(turn) : undefined,
      turn.end ? el("div", { class: `end ${turn.end.stopReason}`, "data-end": turn.end.stopReason, textContent: endText(turn.end) }) : undefined,
      turn.end?.usage ? el("div", { class: "meta", "data-turn-cost": turn.turnId, textContent: turnText(turn.end) }) : undefined)
  }
  // Turns and the session-level lines between them, in log order; in the live view, what has ended is drawn once.
  const timeline = live ? liveTimelineOf(view) : timelineEntries(view.turns, view.notes)
  const nodeOf = ({ turn, note }) =>
    turn !== undefined ? (live ? drawnTurn(turn, renderTurn) : renderTurn(turn)) : live ? drawnOnce(note, renderNote) : renderNote(note)
  const earlier = Math.max(0, timeline.length - state.shown.turns)
  const nodes = timeline.slice(earlier).map(nodeOf)
  if (earlier > 0) nodes.unshift(earlierLine(earlier))
  if (view.turns.length === 0) nodes.push(el("p", { class: "empty", textContent: "No turns yet: send a message." }))
  place(main, nodes)
  watchImages(main)
  if (live && nearBottom) main.scrollTop = main.scrollHeight

  const scrub = $("scrub")
  scrub.disabled = total === 0
  scrub.max = String(total)
  scrub.value = String(at)
  const current = state.events[at - 1]
  $("position").textContent = `#${at}${current ? ` ${current.type}` : ""}`
  $("scrubbing").hidden = live
  $("scrubbing").textContent = live ? "" : `viewing the session as of #${at} of ${total}`
  $("live").hidden = live
  // Rewind here: at a point between turns, while the session itself is idle (a rewind waits for no turn).
  const between = !live && at >= 1 && view.openTurn === undefined && view.compacting === undefined
  $("rewind").hidden = !between
  $("rewind").disabled = !(between && phase(liveView()) === "idle")
  $("cancel").disabled = !(live && view.openTurn !== undefined)
  state.running = live && view.openTurn !== undefined
  state.idle = live && phase(view) === "idle"
  $("send").textContent = state.running ? "Steer" : "Send"
  $("followup").disabled = !state.running
  $("compact").disabled = !(state.idle && view.turns.length > 0)
  $("fork").disabled = !(state.idle && view.turns.length > 0)

  // The session's title as of the view (text from the log: textContent).
  $("name").textContent = view.title ?? ""
  $("name").title = view.title ?? ""

  const calls = openCalls(view)
  $("state-title").textContent = live ? "State" : `State as of #${at}`
  $("state-body").className = ""
  $("state-body").replaceChildren(
    el("dl", {},
      el("dt", { textContent: "phase" }), el("dd", { id: "phase", textContent: phase(view) }),
      el("dt", { textContent: "sequence" }), el("dd", { id: "sequence", textContent: String(view.lastSequence) }),
      el("dt", { textContent: "turns" }), el("dd", { textContent: String(view.turns.length) }),
      el("dt", { textContent: "cwd" }), el("dd", { textContent: view.session?.cwd ?? "" }),
      el("dt", { textContent: "open turn" }), el("dd", { textContent: view.openTurn?.turnId ?? "none" }),
      el("dt", { textContent: "context" }), el("dd", { textContent: view.contextTokens === undefined ? "—" : `${view.contextTokens} tokens` }),
      el("dt", { textContent: "usage" }), el("dd", { id: "usage", textContent: view.totals === undefined ? "—" : totalsText({ ...view.totals, usage: view.totals }) }),
      el("dt", { textContent: "instructions" }), el("dd", { id: "instructions", textContent: instructionsText(view.instructions) }),
      el("dt", { textContent: "follow-ups" }), el("dd", { id: "follow-ups", textContent: view.followUps.length === 0 ? "none queued" : view.followUps.map((f) => f.content).join(" · ") },
        live && view.followUps.length > 0 ? el("button", { id: "drop-followups", textContent: "Drop", style: "margin-left:6px;padding:0 6px", onclick: dropFollowUps(view.followUps.map((f) => f.queueId)) }) : undefined)),
    el("h2", { textContent: "Open calls" }),
    calls.length === 0 ? el("div", { class: "empty", id: "open-calls", textContent: "none" })
      : el("ul", { id: "open-calls" }, ...calls.map((c) => el("li", { "data-call": c.toolCallId, textContent: `${c.tool} — ${c.status.replace("_", " ")}` }))))
  rendered()
}

$("new-session").addEventListener("submit", (e) => {
  e.preventDefault()
  const cwd = $("cwd").value.trim()
  api("POST", "/sessions", cwd === "" ? {} : { cwd }).then((s) => openSession(s.sessionId)).catch(report)
})
// A message leaves the box when it is sent, and comes back only if it was refused and the box is
// still empty: the box was cleared when the answer came, and on a slow client the turn's events
// (streamed on /live) arrived first, the user typed the next message, and the answer erased it.
// Answers whether it was taken.
const send = (route, message, body = { message }) => {
  $("message").value = ""
  return api("POST", `${sessionPath()}/${route}`, body).then(() => true, (error) => {
    if ($("message").value === "") $("message").value = message
    report(error)
    return false
  })
}
$("composer").addEventListener("submit", (e) => {
  e.preventDefault()
  const message = $("message").value
  if (message.trim() === "" || state.sessionId === undefined) return
  state.scrubAt = undefined
  // While a turn runs, a message steers it (seen by the model at its next step); otherwise it starts a turn.
  const route = state.running ? "steer" : "turns"
  if (route === "steer") {
    // Shown at once as pending, until the turn stores it.
    const turn = liveView().openTurn
    const pending = { text: message, turnId: turn?.turnId, seen: turn === undefined ? 0 : turn.items.filter((item) => item.kind === "steer").length }
    state.pendingSteers.push(pending)
    schedule()
    // Named: a steer landing after that turn ended is refused (and put back here), never given to the next turn.
    send("steer", message, turn === undefined ? { message } : { message, turnId: turn.turnId }).then((taken) => {
      if (taken) return
      state.pendingSteers = state.pendingSteers.filter((p) => p !== pending)
      schedule()
    })
    return
  }
  send(route, message)
})
$("followup").addEventListener("click", () => {
  const message = $("message").value
  if (message.trim() === "" || state.sessionId === undefined) return
  send("followups", message)
})
// A manual compaction answers once the model has written the summary; the log shows it meanwhile.
$("compact").addEventListener("click", () => api("POST", `${sessionPath()}/compact`, {}).catch(report))
$("fork").addEventListener("click", () => api("POST", `${sessionPath()}/fork`, {}).then((s) => openSession(s.sessionId)).catch(report))
// Rewind to the point the timeline shows: asked once; files changed outside the agent are listed and overwritten only if confirmed.
const rewindTo = (at, force) => api("POST", `${sessionPath()}/rewind`, force ? { toSequence: at, force: true } : { toSequence: at })
$("rewind").addEventListener("click", () => {
  const at = state.scrubAt
  if (at === undefined || state.sessionId === undefined) return
  if (!confirm(`Rewind the session to #${at}? The conversation continues from there and the files the agent changed since are restored.`)) return
  rewindTo(at, false)
    .catch((error) => {
      const files = error.body?.reason === "changed_outside" ? error.body.files ?? [] : undefined
      if (files === undefined || !confirm(`Changed outside the agent since it wrote them:\n${files.join("\n")}\n\nOverwrite them?`)) throw error
      return rewindTo(at, true)
    })
    .then((done) => {
      state.scrubAt = undefined
      setStatus("live", `Rewound to #${done.toSequence}: ${done.changes.length} file${done.changes.length === 1 ? "" : "s"} restored`)
      render()
    })
    .catch(report)
})
$("message").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("composer").requestSubmit() }
})
// The Stop is for the turn shown running: named, it does nothing if that turn has ended meanwhile and the next one (a queued follow-up's) runs.
$("cancel").addEventListener("click", () => {
  const turnId = liveView().openTurn?.turnId
  api("POST", `${sessionPath()}/cancel${turnId === undefined ? "" : `?turnId=${encodeURIComponent(turnId)}`}`).catch(report)
})
$("scrub").addEventListener("input", (e) => {
  const at = Number(e.target.value)
  state.scrubAt = at >= state.events.length ? undefined : at
  render()
})
$("live").addEventListener("click", () => { state.scrubAt = undefined; render() })
// Renaming: the pencil swaps the title for a box; Enter stores it (session.titled), Escape leaves it as it was.
const renaming = (on) => {
  $("rename-form").hidden = !on
  $("name").hidden = on
  if (on) {
    $("rename-title").value = $("name").textContent
    $("rename-title").focus()
    $("rename-title").select()
  }
}
$("rename").addEventListener("click", () => renaming($("rename-form").hidden))
$("rename-title").addEventListener("keydown", (e) => { if (e.key === "Escape") renaming(false) })
$("rename-form").addEventListener("submit", (e) => {
  e.preventDefault()
  const title = $("rename-title").value
  if (state.sessionId === undefined) return
  // The server's answer is the title as stored; the page shows it when the event arrives on /live. A refusal says why.
  api("POST", `${sessionPath()}/title`, { title }).then(() => renaming(false)).catch(report)
})
// The list follows the boxes as the user types (one request per pause; the one after a listing in flight reads the boxes as they are then).
let filtering
const refilter = () => { clearTimeout(filtering); filtering = setTimeout(refreshSessions, 150) }
$("search").addEventListener("input", refilter)
$("filter-cwd").addEventListener("input", refilter)
$("filters").addEventListener("submit", (e) => { e.preventDefault(); refreshSessions() })
// On a narrow screen the sessions and the state are a drawer.
const drawer = (open) => { document.body.classList.toggle("drawer", open); $("panels").setAttribute("aria-expanded", String(open)) }
$("panels").addEventListener("click", () => drawer(!document.body.classList.contains("drawer")))

// For tests and the curious: the sequences received, in order; how many texts were parsed as Markdown; how many events were folded; how many edits were diffed.
window.effectAgentViewer = { sequences: () => state.events.map((e) => e.sequence), fold, state, markdownParses, folded: () => folding.steps, diffs: () => diffing.runs }

// The session a link names in the fragment; none where it is no valid percent-encoding (`/#%`: a
// hand-typed or another page's link), which threw before the page was done starting.
const linkedSession = () => {
  try {
    return location.hash.length > 1 ? decodeURIComponent(location.hash.slice(1)) : undefined
  } catch {
    return undefined
  }
}

keyChecked.then(() => {
  refreshSessions()
  const linked = linkedSession()
  if (linked !== undefined) openSession(linked)
})
