// Package nativetool is berth's native tool protocol: the SDK with which a
// Go program offers tools to berth, and the host client with which berth
// runs such a program.
//
// A native tool provider is an executable in a bundle (the manifest's
// nativeTools entry) that speaks hashicorp/go-plugin over gRPC. The
// handshake is ProtocolVersion, MagicCookieKey and MagicCookieValue; the
// plugin is dispensed as PluginName and implements the gRPC service
// ServiceName with two unary methods, ListTools and CallTool, whose
// messages are JSON documents in google.protobuf.BytesValue. The protocol
// is specified field by field in docs/native-tools.md, so a provider can be
// written in any language.
//
// # Writing a provider
//
// A plugin's main calls Serve once with its tools. Each Tool has a name,
// a description, a JSON Schema for its arguments, optional annotations and
// a handler. Handlers return a *Result (see Text, Structured, Errorf) or an
// error, which the model sees as an isError result; a panicking handler
// fails only its own call. The workspace directory arrives in the
// environment variable EnvWorkspace.
//
// # Running a provider
//
// Launch starts an executable only if its SHA-256 equals the checksum
// from the staged listing, so a binary swapped after review never runs.
// The returned Client lists and calls tools, reports whether the process
// exited, and kills it together with its process group. Everything a
// plugin sends is validated and bounded (MaxMessageBytes, MaxTools)
// before the host uses it.
package nativetool
