package bundle

// ManifestFile is the name of the manifest at the root of every bundle.
const ManifestFile = "berth.json"

// MaxManifestSize is the largest berth.json berth reads (1 MiB).
const MaxManifestSize = 1 << 20

// Manifest is berth.json, manifest version 1. Field names, nesting and
// meaning are a contract: schemas/berth.schema.json describes exactly these
// types, and a test fails when the two drift.
type Manifest struct {
	ManifestVersion int                    `json:"manifestVersion"`
	Name            string                 `json:"name"`
	Version         string                 `json:"version"`
	Description     string                 `json:"description"`
	Publisher       *Publisher             `json:"publisher,omitempty"`
	License         string                 `json:"license,omitempty"`
	Homepage        string                 `json:"homepage,omitempty"`
	Requires        *Requires              `json:"requires,omitempty"`
	MCPServers      map[string]*Server     `json:"mcpServers,omitempty"`
	NativeTools     map[string]*NativeTool `json:"nativeTools,omitempty"`
	// ImportedFrom is set in a berth.json that berth import generated
	// from another format (imported.go).
	ImportedFrom *ImportedFrom `json:"importedFrom,omitempty"`
}

// Publisher names who publishes the bundle.
type Publisher struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

// Requires states what the bundle needs from the host.
type Requires struct {
	// Berth is a Masterminds/semver constraint on the berth version.
	Berth string `json:"berth,omitempty"`
}

// Server is one MCP server. Exactly one of Stdio and Remote is set.
type Server struct {
	Description string      `json:"description,omitempty"`
	Stdio       *Stdio      `json:"stdio,omitempty"`
	Remote      *Remote     `json:"remote,omitempty"`
	Tools       *ToolFilter `json:"tools,omitempty"`
	Timeouts    *Timeouts   `json:"timeouts,omitempty"`
	// Sandbox is the authority a stdio server declares (docs/sandbox.md);
	// nil means berth's default profile. Not valid on a remote.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
}

// Stdio is a local server that berth starts as a child process.
type Stdio struct {
	Command string               `json:"command"`
	Args    []string             `json:"args,omitempty"`
	Env     map[string]EnvSource `json:"env,omitempty"`
	Cwd     string               `json:"cwd,omitempty"`
}

// EnvSource names the host environment variable a value is read from. A
// bundle never carries a literal value: argv and manifests are readable by
// others, and a reviewer must see where every secret comes from.
//
// BundlePath, instead of FromEnv, is the one other source, and only for
// PYTHONPATH and NODE_PATH of a stdio server (BundlePathKey): folders or
// files of the bundle, as clean paths relative to its root, which berth
// joins with the platform's list separator, each under the staged
// snapshot, when the server starts.
type EnvSource struct {
	FromEnv    string   `json:"fromEnv,omitempty"`
	BundlePath []string `json:"bundlePath,omitempty"`
}

// Remote is a server reached over HTTP.
type Remote struct {
	Transport string               `json:"transport"`
	URL       string               `json:"url"`
	Headers   map[string]EnvSource `json:"headers,omitempty"`
	Auth      *RemoteAuth          `json:"auth,omitempty"`
	Network   *Network             `json:"network,omitempty"`
}

// RemoteAuth says where a remote's credentials come from: a static bearer
// token from the host environment, or an OAuth sign-in. At most one.
type RemoteAuth struct {
	BearerFromEnv string `json:"bearerFromEnv,omitempty"`
	OAuth         *OAuth `json:"oauth,omitempty"`
}

// OAuth declares that a remote is an OAuth-protected resource the operator
// signs in to (docs/signin.md). Every field is optional: "oauth": {}
// discovers everything from the server's protected-resource metadata.
type OAuth struct {
	// Scopes to ask for; when empty, the scopes the server names.
	Scopes []string `json:"scopes,omitempty"`
	// ClientID is a pre-registered public client (never a secret).
	ClientID string `json:"clientId,omitempty"`
	// RedirectPort is the loopback port of the redirect; 0 means any free port.
	RedirectPort int `json:"redirectPort,omitempty"`
	// Issuer pins the authorization server's issuer (https).
	Issuer string `json:"issuer,omitempty"`
}

// Network declares the hosts a remote talks to.
type Network struct {
	Hosts []string `json:"hosts,omitempty"`
}

// ToolFilter narrows the tools of a server. Deny wins over allow; no allow
// list means every tool.
type ToolFilter struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Timeouts are Go durations ("30s", "2m").
type Timeouts struct {
	Startup string `json:"startup,omitempty"`
	Call    string `json:"call,omitempty"`
}

// NativeTool is an executable in the bundle that speaks berth's native tool
// protocol (hashicorp/go-plugin over gRPC).
type NativeTool struct {
	Executable string `json:"executable"`
	// Sandbox is the authority the provider declares (docs/sandbox.md);
	// nil means berth's default profile.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
}

// Remote transports.
const (
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)
