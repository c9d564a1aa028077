// The sign-in form of the effect-agent viewer: posts the token as JSON to /login (the server takes
// JSON only, from this origin's own page), which sets the viewer's HttpOnly cookie; then opens the
// viewer. The token is never put in a URL: without this script the form cannot be sent at all
// (the page's Content-Security-Policy has `form-action 'none'`).

const form = document.getElementById("login")
const input = document.getElementById("token")
const button = document.getElementById("sign-in")
const status = document.getElementById("status")

form.addEventListener("submit", async (event) => {
  event.preventDefault()
  const token = input.value.trim()
  if (token === "") return
  button.disabled = true
  status.textContent = ""
  delete status.dataset.status
  try {
    const response = await fetch("/login", {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token })
    })
    if (response.status === 204) {
      // The viewer page's key, for the changes it asks for (see page.js).
      localStorage.setItem("effect-agent-page-key", response.headers.get("x-effect-agent-key") ?? "")
      location.replace("/")
      return
    }
    const text = await response.text()
    let message = `HTTP ${response.status}`
    try {
      message = JSON.parse(text).message ?? message
    } catch {
      // not JSON
    }
    status.dataset.status = String(response.status)
    status.textContent = response.status === 429
      ? `Too many attempts: try again in ${response.headers.get("retry-after") ?? "a few"} s.`
      : message
    input.value = ""
  } catch (error) {
    status.textContent = error.message
  } finally {
    button.disabled = false
    input.focus()
  }
})
