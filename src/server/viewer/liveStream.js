// The page's reads of a session's `/live` stream (Server-Sent Events) with `fetch`, not
// `EventSource`: the server asks every request made with the viewer's cookie for the page's key in
// a header (`X-Effect-Agent-Key`), and `EventSource` sends no headers of the page's choosing. The
// key stays out of the URL, so it is in no log, trace or list of requests that shows URLs.
// Its own module (no DOM): Node tests import the parser.

/**
 * A parser of an SSE stream as the server writes it (`id:`, `event:`, `data:`, `:` comments, a
 * blank line ending each event), by the WHATWG rules for those fields and for line ends (LF, CR LF,
 * CR). `feed` takes the text as it arrives, cut anywhere; `onEvent({ id, event, data })` is called
 * at the end of each event that has data.
 */
export const sseParser = (onEvent) => {
  let buffer = ""
  // Where in `buffer` the search for the next line end resumes: a long line arriving in many chunks is scanned once.
  let scanned = 0
  let data = []
  let event = ""
  let id = ""
  const line = (text) => {
    if (text === "") {
      if (data.length > 0) onEvent({ id, event: event === "" ? "message" : event, data: data.join("\n") })
      data = []
      event = ""
      return
    }
    if (text.charCodeAt(0) === 58) return // ":" a comment (the server's keep-alives)
    const colon = text.indexOf(":")
    const field = colon === -1 ? text : text.slice(0, colon)
    const value = colon === -1 ? "" : text.charCodeAt(colon + 1) === 32 ? text.slice(colon + 2) : text.slice(colon + 1)
    if (field === "data") data.push(value)
    else if (field === "event") event = value
    else if (field === "id" && !value.includes("\u0000")) id = value
  }
  const ends = /\r\n|\r|\n/g
  return {
    feed: (chunk) => {
      buffer += chunk
      let at = 0
      ends.lastIndex = scanned
      for (let match = ends.exec(buffer); match !== null; match = ends.exec(buffer)) {
        // A CR last in what has come may be the first half of a CR LF: wait for the next chunk.
        if (match[0] === "\r" && match.index === buffer.length - 1) break
        line(buffer.slice(at, match.index))
        at = ends.lastIndex
      }
      buffer = buffer.slice(at)
      scanned = Math.max(0, buffer.length - 1)
    }
  }
}

/**
 * Follows `url` (a `/live` route, `?after=` in it) with the page's key: `onOpen()` once the server
 * has answered 200, `onEvent({ id, event, data })` for each event, then `onEnd(status)` once, when
 * the stream ends — the status of an answer that was not 200, 0 when the connection closed or
 * failed. Answers a function that stops it (no callback is called after it).
 */
export const follow = (url, key, { onOpen, onEvent, onEnd }) => {
  const controller = new AbortController()
  let stopped = false
  const read = async () => {
    const response = await fetch(url, {
      credentials: "same-origin",
      cache: "no-store",
      headers: { accept: "text/event-stream", "x-effect-agent-key": key },
      signal: controller.signal
    })
    if (response.status !== 200 || response.body === null) return response.status
    if (stopped) return 0
    onOpen()
    const parser = sseParser((event) => {
      if (!stopped) onEvent(event)
    })
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
    for (;;) {
      const next = await reader.read()
      if (next.done || stopped) return 0
      parser.feed(next.value)
    }
  }
  read().then((status) => status, () => 0).then((status) => {
    if (!stopped) {
      stopped = true
      onEnd(status)
    }
  })
  return () => {
    stopped = true
    controller.abort()
  }
}
