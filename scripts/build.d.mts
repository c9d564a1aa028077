/** Builds dist (see build.mjs): "built", "current" (skipped: dist is the build of the current inputs) or, when `lenient`, what went wrong but left a runnable dist of the current sources. */
export declare const build: (options?: { readonly ifStale?: boolean; readonly lenient?: boolean }) => string
