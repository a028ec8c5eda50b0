package bundle

import (
	"slices"

	"github.com/berth-mcp/berth/bundle/runtimefetch"
)

// Rule IDs. Each is stable, kebab-case and documented in docs/rules.md.
const (
	// Decoding berth.json.
	RuleManifestMissing     = "manifest-missing"
	RuleManifestNotRegular  = "manifest-not-regular"
	RuleManifestTooLarge    = "manifest-too-large"
	RuleManifestBOM         = "manifest-bom"
	RuleManifestInvalidUTF8 = "manifest-invalid-utf8"
	RuleManifestSyntax      = "manifest-syntax"
	RuleManifestTrailing    = "manifest-trailing-data"
	RuleDuplicateKey        = "duplicate-key"
	RuleUnknownField        = "unknown-field"
	RuleWrongType           = "wrong-type"

	// Top level.
	RuleRequiredField       = "required-field"
	RuleManifestVersion     = "manifest-version"
	RuleNoComponents        = "no-components"
	RuleNameFormat          = "name-format"
	RuleVersionSemver       = "version-semver"
	RuleVersionDerived      = "version-derived"
	RuleDescriptionLength   = "description-length"
	RuleHTTPSURL            = "https-url"
	RuleRequiresConstraint  = "requires-constraint"
	RuleRequiresUnsatisfied = "requires-unsatisfied"

	// Servers.
	RuleServerNameFormat = "server-name-format"
	RuleServerTransport  = "server-transport"
	RuleTimeoutFormat    = "timeout-format"
	RuleTimeoutRange     = "timeout-range"

	// Stdio servers.
	RuleCommandRequired      = "command-required"
	RuleCommandForm          = "command-form"
	RuleCommandNotExecutable = "command-not-executable"
	RuleVariableUnknown      = "variable-unknown"
	RuleVariablePlacement    = "variable-placement"
	RuleBundlePathUnclean    = "bundle-path-unclean"
	RuleBundlePathMissing    = "bundle-path-missing"
	RuleCwdNotDirectory      = "cwd-not-directory"
	RuleRuntimeFetchUnpinned = runtimefetch.RuleUnpinned
	RuleEnvLiteralValue      = "env-literal-value"
	RuleEnvNameFormat        = "env-name-format"
	RuleEnvKeyForbidden      = "env-key-forbidden"
	RuleEnvBundlePath        = "env-bundle-path"

	// Remote servers.
	RuleRemoteTransport      = "remote-transport"
	RuleRemoteURL            = "remote-url"
	RuleRemoteURLScheme      = "remote-url-scheme"
	RuleRemoteURLUserinfo    = "remote-url-userinfo"
	RuleRemoteURLFragment    = "remote-url-fragment"
	RuleRemoteURLSecretQuery = "remote-url-secret-query"
	RuleHeaderLiteralValue   = "header-literal-value"
	RuleHeaderNameFormat     = "header-name-format"
	RuleHeaderForbidden      = "header-forbidden"
	RuleNetworkHostsMissing  = "network-hosts-missing"
	RuleNetworkHostsMismatch = "network-hosts-mismatch"

	// Remote sign-in (auth.oauth, issue 21).
	RuleOAuthExclusive    = "oauth-exclusive"
	RuleOAuthScope        = "oauth-scope"
	RuleOAuthClientID     = "oauth-client-id"
	RuleOAuthRedirectPort = "oauth-redirect-port"
	RuleOAuthIssuer       = "oauth-issuer"

	// Sandbox declarations (docs/sandbox.md, issue 22).
	RuleSandboxRemote      = "sandbox-remote"
	RuleSandboxPath        = "sandbox-path"
	RuleSandboxNetworkMode = "sandbox-network-mode"
	RuleSandboxHost        = "sandbox-host"
	RuleSandboxReason      = "sandbox-reason"

	// Tool filters and native tools.
	RuleToolPattern          = "tool-pattern"
	RuleNativeToolNameFormat = "native-tool-name-format"
	RuleNativeToolNameTaken  = "native-tool-name-taken"
	RuleNativeExecutable     = "native-executable"

	// The file tree.
	RuleSymlinkEscapes     = "symlink-escapes"
	RuleSymlinkDangling    = "symlink-dangling"
	RuleHardLink           = "hard-link"
	RuleSpecialFile        = "special-file"
	RulePathCharacters     = "path-characters"
	RulePathCaseCollision  = "path-case-collision"
	RulePathTooLong        = "path-too-long"
	RuleTreeTooLarge       = "tree-too-large"
	RuleTreeTooManyEntries = "tree-too-many-entries"

	// Archives.
	RuleArchiveFormat       = "archive-format"
	RuleArchiveAbsolute     = "archive-absolute-path"
	RuleArchiveTraversal    = "archive-path-traversal"
	RuleArchiveDuplicate    = "archive-duplicate-entry"
	RuleArchiveSizeMismatch = "archive-size-mismatch"
)

// Rule IDs of the hardening of runtime fetches, environment keys and
// portable manifests and trees (issue 9).
const (
	RuleCommandWrapper          = runtimefetch.RuleCommandWrapper
	RuleRuntimeFetchForm        = runtimefetch.RuleForm
	RuleRuntimeFetchOption      = runtimefetch.RuleOption
	RuleRuntimeFetchPackages    = runtimefetch.RulePackages
	RuleRuntimeFetchImageDigest = runtimefetch.RuleImageDigest
	RuleRuntimeFetchCwd         = "runtime-fetch-cwd"
	RuleInlineCode              = runtimefetch.RuleInlineCode
	RuleIntegerForm             = "integer-form"
	RuleControlCharacter        = "control-character"
	RuleRemoteURLPort           = "remote-url-port"
	RulePathWindowsName         = "path-windows-name"
)

// Importers of other formats (imported.go, mcpb.go, claudeplugin.go,
// registry.go). A problem of an imported source is located in the source's
// own file and field: "manifest.json: server.mcp_config.env.API_KEY".
const (
	RuleImportedFrom    = "imported-from"
	RuleImportAmbiguous = "import-ambiguous"
	RuleRuntimeFetchPin = "runtime-fetch-pin"
	RuleConfirmInput    = "confirm-input"

	RuleMCPBSyntax         = "mcpb-manifest-syntax"
	RuleMCPBVersion        = "mcpb-manifest-version"
	RuleMCPBUnknownField   = "mcpb-unknown-field"
	RuleMCPBWrongType      = "mcpb-wrong-type"
	RuleMCPBRequiredField  = "mcpb-required-field"
	RuleMCPBEntryPoint     = "mcpb-entry-point"
	RuleMCPBVariable       = "mcpb-variable"
	RuleMCPBUserConfigArg  = "mcpb-user-config-arg"
	RuleMCPBEnvValue       = "mcpb-env-value"
	RuleMCPBUserConfigName = "mcpb-user-config-name"
	RuleMCPBPlatform       = "mcpb-platform"
	RuleMCPBRuntime        = "mcpb-runtime"
	RuleMCPBSignatureBlock = "mcpb-signature-block"

	RuleClaudeManifestMissing = "claude-plugin-manifest-missing"
	RuleClaudeSyntax          = "claude-plugin-syntax"
	RuleClaudeUnknownField    = "claude-plugin-unknown-field"
	RuleClaudeWrongType       = "claude-plugin-wrong-type"
	RuleClaudeRequiredField   = "claude-plugin-required-field"
	RuleClaudeVersionMissing  = "claude-plugin-version-missing"
	RuleClaudePath            = "claude-plugin-path"
	RuleClaudeServerType      = "claude-plugin-server-type"
	RuleClaudeServerDuplicate = "claude-plugin-server-duplicate"
	RuleClaudeVariable        = "claude-plugin-variable"
	RuleClaudeLiteralValue    = "claude-plugin-literal-value"
	RuleClaudeRemoteAuth      = "claude-plugin-remote-auth"

	RuleRegistrySyntax        = "registry-syntax"
	RuleRegistrySchema        = "registry-schema"
	RuleRegistrySchemaUnknown = "registry-schema-ambiguous"
	RuleRegistryUnknownField  = "registry-unknown-field"
	RuleRegistryWrongType     = "registry-wrong-type"
	RuleRegistryRequiredField = "registry-required-field"
	RuleRegistryUnpinned      = "registry-version-unpinned"
	RuleRegistryOCIDigest     = "registry-oci-digest"
	RuleRegistryMCPBDigest    = "registry-mcpb-digest"
	RuleRegistryMCPBChoice    = "registry-mcpb-choice"
	RuleRegistryPackageType   = "registry-package-type"
	RuleRegistryPackageSource = "registry-package-source"
	RuleRegistryTransport     = "registry-transport"
	RuleRegistryURLVariable   = "registry-url-variable"
	RuleRegistryLiteralValue  = "registry-literal-value"
	RuleRegistrySecretArgv    = "registry-secret-in-argv"
	RuleRegistryArgumentInput = "registry-argument-input"
)

// Rule is one rule a bundle must follow.
type Rule struct {
	// ID is stable and kebab-case; Problem.Rule holds it.
	ID string
	// Summary says in one line what breaks the rule.
	Summary string
}

// Rules returns every rule, in documentation order (docs/rules.md). The
// slice is the caller's to change.
func Rules() []Rule { return slices.Clone(rules) }

// rules is every rule ID with a one-line summary, in documentation order.
var rules = []Rule{
	{RuleManifestMissing, "the bundle has no berth.json at its root"},
	{RuleManifestNotRegular, "berth.json is not a regular file"},
	{RuleManifestTooLarge, "berth.json is larger than 1 MiB"},
	{RuleManifestBOM, "berth.json starts with a byte-order mark"},
	{RuleManifestInvalidUTF8, "berth.json is not valid UTF-8"},
	{RuleManifestSyntax, "berth.json is not well-formed JSON"},
	{RuleManifestTrailing, "data follows the JSON value in berth.json"},
	{RuleDuplicateKey, "an object has the same key twice, or headers name one header twice in different case"},
	{RuleUnknownField, "a field that manifest v1 does not define"},
	{RuleWrongType, "a value of the wrong JSON type"},
	{RuleRequiredField, "a required field is missing or empty"},
	{RuleManifestVersion, "manifestVersion is not the integer 1"},
	{RuleNoComponents, "the bundle declares no mcpServers and no nativeTools"},
	{RuleNameFormat, "name is not lower-case letters, digits and inner hyphens (1-64)"},
	{RuleVersionSemver, "version is not strict semver 2.0"},
	{RuleVersionDerived, "a version of berth's derived form 0.0.0-berth.* without the importedFrom.derivedVersion it was derived from, or the reverse"},
	{RuleDescriptionLength, "description is empty or longer than 1024 characters"},
	{RuleHTTPSURL, "publisher.url or homepage is not an https URL"},
	{RuleRequiresConstraint, "requires.berth is not a valid semver constraint"},
	{RuleRequiresUnsatisfied, "this berth's version does not satisfy requires.berth"},
	{RuleServerNameFormat, "a server name is not lower-case letters, digits, _ and - (1-32), or has __"},
	{RuleServerTransport, "a server sets neither or both of stdio and remote"},
	{RuleTimeoutFormat, "a timeout is not a Go duration"},
	{RuleTimeoutRange, "a timeout is outside its range (startup 1s-10m, call 1s-1h)"},
	{RuleCommandRequired, "a stdio server has no command"},
	{RuleCommandForm, "command is neither ${bundle}/path, ${workspace}/path nor a bare program name"},
	{RuleCommandNotExecutable, "a bundled command is not a regular file with an exec bit"},
	{RuleVariableUnknown, "a ${...} variable other than ${bundle} and ${workspace}"},
	{RuleVariablePlacement, "${bundle} or ${workspace} is not at the start of a path"},
	{RuleBundlePathUnclean, "a ${bundle}/ path has .., //, . or a trailing slash"},
	{RuleBundlePathMissing, "a ${bundle}/ path does not exist in the bundle"},
	{RuleCwdNotDirectory, "cwd names something that is not a directory in the bundle"},
	{RuleRuntimeFetchUnpinned, "a runtime fetcher (npx, bunx, pnpm dlx, uvx, ...) runs a package without an exact version"},
	{RuleEnvLiteralValue, "an env value is a literal string instead of {\"fromEnv\": NAME}"},
	{RuleEnvNameFormat, "an environment variable name is not [A-Za-z_][A-Za-z0-9_]*"},
	{RuleEnvKeyForbidden, "the bundle sets a variable that configures the loader, a shell, an interpreter or a package manager (PATH, LD_*, NODE_*, ...)"},
	{RuleEnvBundlePath, "a {\"bundlePath\": [...]} value is not PYTHONPATH or NODE_PATH of a stdio server with every element a clean path inside the bundle"},
	{RuleRemoteTransport, "a remote's transport is missing or not streamable-http or sse"},
	{RuleRemoteURL, "a remote's url is missing or does not parse"},
	{RuleRemoteURLScheme, "a remote's url is not https (http only for loopback literals)"},
	{RuleRemoteURLUserinfo, "a remote's url carries user:password@"},
	{RuleRemoteURLFragment, "a remote's url has a #fragment"},
	{RuleRemoteURLSecretQuery, "a remote's url has a query parameter that looks like a credential"},
	{RuleHeaderLiteralValue, "a header value is a literal string instead of {\"fromEnv\": NAME}"},
	{RuleHeaderNameFormat, "a header name is not an HTTP token"},
	{RuleHeaderForbidden, "a header that berth controls (Host, Cookie, ...), or Authorization beside auth.bearerFromEnv"},
	{RuleNetworkHostsMissing, "a remote has no network.hosts"},
	{RuleNetworkHostsMismatch, "network.hosts is not the endpoint's normalized host set"},
	{RuleOAuthExclusive, "auth.oauth beside auth.bearerFromEnv or an Authorization header: two sources of one credential"},
	{RuleOAuthScope, "an auth.oauth.scopes entry is empty, holds a space, a control character, '\"' or '\\', or is listed twice"},
	{RuleOAuthClientID, "auth.oauth.clientId is empty, not printable ASCII, longer than 255 characters, or looks like a secret"},
	{RuleOAuthRedirectPort, "auth.oauth.redirectPort is not a port from 1024 to 65535"},
	{RuleOAuthIssuer, "auth.oauth.issuer is not an https URL without query, fragment or user name (http only for loopback)"},
	{RuleSandboxRemote, "a remote server has a sandbox; only stdio servers and native tool providers run under one"},
	{RuleSandboxPath, "a sandbox path is not ${bundle}, ${workspace}, ${cache}, ${tmp} (alone or with /<clean path>) or ${home}/<clean path>; has .., a glob, an absolute path or another variable; is ${bundle} in write; or is listed twice"},
	{RuleSandboxNetworkMode, "a sandbox's network.mode is missing or not none, hosts or unrestricted"},
	{RuleSandboxHost, "a network.hosts entry is not host:port (a lower-case DNS name with at most one leading *. label, or an IP literal; port 1-65535), is listed twice, or hosts are given with a mode other than hosts, or none with hosts"},
	{RuleSandboxReason, "network.mode unrestricted without a printable reason of 1-200 characters, or a reason with another mode"},
	{RuleToolPattern, "a tool allow/deny entry uses characters other than [A-Za-z0-9_.-*?]"},
	{RuleNativeToolNameFormat, "a native tool name is not lower-case letters, digits, _ and - (1-32), or has __"},
	{RuleNativeToolNameTaken, "a native tool provider has the name of a server"},
	{RuleNativeExecutable, "a native tool executable is not a ${bundle}/ regular file with an exec bit"},
	{RuleSymlinkEscapes, "a symlink points outside the bundle, or is absolute"},
	{RuleSymlinkDangling, "a symlink points at nothing inside the bundle"},
	{RuleHardLink, "a hard link"},
	{RuleSpecialFile, "a device, socket or FIFO"},
	{RulePathCharacters, "a path with a backslash, NUL or control character, or not valid UTF-8"},
	{RulePathCaseCollision, "two paths that differ only in case"},
	{RulePathTooLong, "a path longer than the cap (4096 bytes)"},
	{RuleTreeTooLarge, "the files add up to more than the cap (1 GiB)"},
	{RuleTreeTooManyEntries, "more entries than the cap (100,000)"},
	{RuleArchiveFormat, "the archive is corrupt or of an unsupported format"},
	{RuleArchiveAbsolute, "an archive entry with an absolute path"},
	{RuleArchiveTraversal, "an archive entry whose path contains .."},
	{RuleArchiveDuplicate, "an archive entry that appears twice"},
	{RuleArchiveSizeMismatch, "an archive entry whose data does not match its declared size"},

	// Hardening (issue 9): documented in their own section of docs/rules.md.
	{RuleCommandWrapper, "the command is a shell or a program that runs another program (sh, env, sudo, timeout, ...)"},
	{RuleRuntimeFetchForm, "a package manager, package runner or runtime that downloads code is used in a form berth does not accept"},
	{RuleRuntimeFetchOption, "a runtime fetcher is given an option that is not on its allow-list"},
	{RuleRuntimeFetchPackages, "a runtime fetcher names no package, or more than one"},
	{RuleRuntimeFetchImageDigest, "a container runner names its image by tag or without a sha256 digest"},
	{RuleRuntimeFetchCwd, "a runtime-fetched server sets cwd; it always runs in an empty directory of berth's"},
	{RuleInlineCode, "an interpreter is given the code it runs in its arguments (node -e, python3 -c, perl -e, sh -c, ...)"},
	{RuleIntegerForm, "an integer is written with a fraction or an exponent (1.0, 1e0)"},
	{RuleControlCharacter, "a manifest string or key holds a NUL or another control character"},
	{RuleRemoteURLPort, "a remote's url has a port outside 1-65535"},
	{RulePathWindowsName, "a path Windows cannot hold: a reserved name (CON, NUL, COM1, ...), a name ending in '.' or ' ', or ':'"},

	// Importers of other formats.
	{RuleImportedFrom, "importedFrom in berth.json names an unknown format or a manifest file the bundle lacks"},
	{RuleImportAmbiguous, "a source without berth.json holds the manifests of more than one other format"},
	{RuleRuntimeFetchPin, "berth import --pin could not pin a fetch the source leaves unpinned against its registry"},
	{RuleConfirmInput, "an importedFrom input the operator confirms is sensitive, looks like a credential, or names a variable no server reads"},
	{RuleMCPBSyntax, "manifest.json of an MCP Bundle is not one well-formed JSON object, or not a regular file"},
	{RuleMCPBVersion, "manifest_version (or dxt_version) is missing, not 0.1 to 0.4, or the two disagree"},
	{RuleMCPBUnknownField, "a field that the MCPB manifest version does not define"},
	{RuleMCPBWrongType, "an MCPB field has the wrong type or a value outside its set"},
	{RuleMCPBRequiredField, "a field that MCPB requires is missing"},
	{RuleMCPBEntryPoint, "server.entry_point is not a clean path of a file in the bundle"},
	{RuleMCPBVariable, "a ${...} that berth cannot carry over: ${HOME}, ${DESKTOP}, ${DOCUMENTS}, ${DOWNLOADS}, an unknown one, or an undeclared user_config key"},
	{RuleMCPBUserConfigArg, "a user_config value in command or args that could hold a secret or has no fixed value"},
	{RuleMCPBEnvValue, "an mcp_config env value that is not exactly ${user_config.KEY}"},
	{RuleMCPBUserConfigName, "two user_config keys map to the same environment variable"},
	{RuleMCPBPlatform, "compatibility.platforms does not include this machine's platform"},
	{RuleMCPBRuntime, "compatibility.runtimes is not a version range, or this machine's node or python is not in it"},
	{RuleMCPBSignatureBlock, "the appended MCPB signature block is cut off, doubled, oversized or followed by other bytes"},
	{RuleClaudeManifestMissing, "a Claude Code plugin directory has .mcp.json but no .claude-plugin/plugin.json"},
	{RuleClaudeSyntax, "plugin.json or an MCP server file is not one well-formed JSON object, or not a regular file"},
	{RuleClaudeUnknownField, "a field that Claude Code plugin files do not define"},
	{RuleClaudeWrongType, "a Claude Code plugin field has the wrong type"},
	{RuleClaudeRequiredField, "a field that a Claude Code plugin file requires is missing (name, a server's command or url) or empty (a connector's url)"},
	{RuleClaudeVersionMissing, "plugin.json has an empty version, or berth cannot derive one from the plugin's content"},
	{RuleClaudePath, "a plugin path does not start with ./, leaves the plugin, or names nothing in it"},
	{RuleClaudeServerType, "an MCP server's type is not stdio, http or sse, or its fields do not fit its type"},
	{RuleClaudeServerDuplicate, "two MCP server definitions of the plugin have the same name, or names that map to one berth name"},
	{RuleClaudeVariable, "a ${...} that berth cannot carry over, or any variable in a url or in command and args other than ${CLAUDE_PLUGIN_ROOT}"},
	{RuleClaudeLiteralValue, "an env or header value that is not exactly one ${VAR} (or Authorization: Bearer ${VAR})"},
	{RuleClaudeRemoteAuth, "a remote server uses headersHelper, or oauth settings berth cannot carry over (xaa, an authServerMetadataUrl at no well-known location, empty scopes)"},
	{RuleRegistrySyntax, "server.json is not one well-formed JSON object, or not a regular file"},
	{RuleRegistrySchema, "server.json's $schema names no server.json schema version the registry has published"},
	{RuleRegistrySchemaUnknown, "server.json has an empty or no $schema, and is valid under none or more than one published schema version"},
	{RuleRegistryUnknownField, "a field that the server.json version $schema names does not define, and another published version does"},
	{RuleRegistryWrongType, "a server.json field has the wrong type or a value outside its pattern"},
	{RuleRegistryRequiredField, "a field that server.json requires is missing"},
	{RuleRegistryUnpinned, "a package's version is missing, \"latest\" or a range"},
	{RuleRegistryOCIDigest, "an oci package names its image by tag only, without @sha256:"},
	{RuleRegistryMCPBDigest, "an mcpb package has no valid fileSha256"},
	{RuleRegistryMCPBChoice, "a registry entry offers several MCP Bundles and nothing else"},
	{RuleRegistryPackageType, "a package's registryType has no pinned runner in berth (nuget, cargo, ...)"},
	{RuleRegistryPackageSource, "a package names a registryBaseUrl other than its registry's default"},
	{RuleRegistryTransport, "a package's transport is not stdio, or a remote's type is not streamable-http or sse"},
	{RuleRegistryURLVariable, "a {variable} in a remote's url"},
	{RuleRegistryLiteralValue, "a header or environment variable with a fixed value, or a value that is not exactly one {variable}"},
	{RuleRegistrySecretArgv, "an argument marked isSecret, which would be visible in argv"},
	{RuleRegistryArgumentInput, "a required argument with no value or default, or a value with a {variable}"},
}
