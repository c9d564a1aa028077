/**
 * Unpacks the tests' Chromium (@sparticuz/chromium) once, before any test file starts. The package
 * writes the browser to `<tmp>/chromium` on the first `executablePath()` and answers every later
 * call with that path as soon as the file exists — while the first call is still writing it. Two
 * browser test files starting at once on a machine where it was never unpacked (a fresh CI machine)
 * then ran a half-written binary: `spawn ETXTBSY` (reproduced with two processes on an empty
 * TMPDIR, 2 of 2). Global setup runs before the workers, so every file finds the whole browser.
 */
import chromium from "@sparticuz/chromium"

export default async function setup() {
  await chromium.executablePath()
}
