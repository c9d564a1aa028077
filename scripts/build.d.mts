/** Builds dist (see build.mjs): "built", "current" (skipped, dist is the build of the current inputs) or, with `ifStale`, what went wrong but left a runnable dist. */
export declare const build: (options?: { readonly ifStale?: boolean }) => string
