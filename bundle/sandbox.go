package bundle

// Sandbox is the authority a local server or native-tool provider
// declares, and the limit berth holds it to (docs/sandbox.md). Paths are
// built from berth's variables: ${bundle} (always readable, never
// writable), ${workspace}, ${cache} and ${tmp} (the server's own
// directories, which berth owns) and ${home}/<path> (a named path under the
// operator's home). A nil Filesystem or Network leaves that part to
// berth's default profile.
type Sandbox struct {
	Filesystem *SandboxFilesystem `json:"filesystem,omitempty"`
	Network    *SandboxNetwork    `json:"network,omitempty"`
}

// SandboxFilesystem lists the paths a server may read, and those it may
// read and write. Nothing it declares is executable but ${bundle}.
type SandboxFilesystem struct {
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
}

// SandboxNetwork is what a server may reach: nothing, a list of
// host:port through berth's egress proxy, or anything (with a reason the
// review shows).
type SandboxNetwork struct {
	Mode   string   `json:"mode"`
	Hosts  []string `json:"hosts,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// Network modes of a SandboxNetwork.
const (
	NetworkNone         = "none"
	NetworkHosts        = "hosts"
	NetworkUnrestricted = "unrestricted"
)
