// Package pool runs the MCP servers and native tool providers of the
// plugins enabled in one workspace and offers their tools, prompts and
// resources to one caller (the CLI, or the MCP exporter) under namespaced
// names. At every catalog and dispatch boundary it re-checks that what
// runs is still what was reviewed. It knows nothing about how its catalog
// is served, and it does not decide approval: Call takes an Approver.
//
// # Lifecycle
//
// Open reads the state and starts every enabled plugin's servers in the
// background, concurrently: a slow or failing server never holds up the
// others. Each server is starting, running, failed (with its error and
// stderr tail), drifted, changed (tool surface changed) or stopped.
//
// A native tool provider (the manifest's nativeTools; package nativetool)
// is supervised exactly like a server, with the same states, restarts,
// retry rule, pinning and boundaries; only its connection differs. It is
// launched only through nativetool.Launch with the executable's SHA-256
// from the staged listing, so a file that differs is never started: that
// refusal makes the plugin drifted (the error wraps store.ErrDrift and
// nativetool.ErrChecksumMismatch). It runs in its own process group with
// the base environment of a stdio server plus BERTH_WORKSPACE, in the
// staged snapshot; its stderr and go-plugin's log lines are kept like a
// stdio server's. Its identity is "<plugin>__<entry>" (NativeProviderID),
// its Status kind KindNative, its pinned surface kept under
// "native:<entry>" (NativeSurfaceKey).
//
// Stdio servers run with ${bundle} and ${workspace} substituted, in the
// staged snapshot (or the manifest's cwd), with only the base environment
// (PATH, HOME, LANG, TMPDIR) and their declared fromEnv variables, in their
// own process group; stopping one closes its stdin, waits, sends SIGTERM
// to the group, waits, and sends SIGKILL to the group. Their stderr is kept
// (TailLines lines) and logged to $BERTH_HOME/logs/<plugin>__<server>.log.
// Remote servers are reached over go-sdk's Streamable HTTP or SSE client
// transports through a guarded HTTP client: no ambient proxy, no private,
// loopback, link-local or metadata address unless the endpoint is a
// loopback literal, connections pinned to the checked address, redirects
// and requests only within the reviewed origin, credentials only from
// their declared environment sources.
//
// A server that dies, or does not answer within its call timeout, is
// restarted after 1, 2, 4, 8 and 16 s (at most MaxRestarts in a row; a
// successful call resets the count). The call that found it dead is
// repeated once, after the restart, only for tools annotated readOnlyHint
// or idempotentHint. Hung servers are found by the call timeout alone:
// go-sdk sends no keepalive pings on 2026-07-28 sessions, which Go
// servers negotiate.
//
// # Boundaries
//
// Before every catalog assembly (Tools, Prompts, Resources) and every
// dispatch (Call, GetPrompt, ReadResource), and in the background every
// PollInterval, the pool (1) compares the state generation
// (store.GenerationWatch: no syscall while a file-system watch has seen no
// change to state.json or config.json, a stat once a second and without a
// watch, a read only when it moved) and reconciles: disabled, revoked or replaced
// plugins are stopped, their calls cancelled and their process groups
// terminated, newly enabled ones started, the tool policy re-read; and (2)
// checks the plugin's staged snapshot for drift (store.DriftChecker): a
// drifted plugin's children are killed at once and the call fails with an
// error wrapping store.ErrDrift that names the file.
//
// # Names, policy, surfaces
//
// Tools and prompts of servers and native tool providers alike are named
// "<plugin>__<provider>__<name>" (ExportName, ParseName); should two
// entries still meet (a shortened name), neither is offered, and Status
// reports the collision. Resources keep their URIs and ReadResource
// routes each to the one server that lists it or has a matching template.
// The manifest's tools.allow and tools.deny apply first (a native tool
// provider has none), then the operator's tool policy (store.MatchPolicy),
// whose rules match only names of their own plugin: deny hides a tool,
// prompt or server's resources and refuses it; allow and ask are attached
// to each catalog entry, and GetPrompt and ReadResource ask the approver as
// Call does.
//
// The first listing of a server after enable pins its tool surface in the
// state (ToolHash per tool). Later, a changed or new tool is withheld and
// the server is changed until Accept records the new surface; Call of a
// withheld tool returns a *SurfaceError, which wraps store.ErrDrift.
//
// # Concurrency
//
// A Pool is safe for concurrent use. Each server has one supervisor
// goroutine that owns its process and connection; callers read its state
// under a lock and never wait for I/O under one. The catalog is rebuilt
// from the servers' last listings only after something changed. The pool
// keeps no global state; open one per workspace and process.
package pool
