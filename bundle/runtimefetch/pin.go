package runtimefetch

import (
	"fmt"
	"slices"
	"strings"
)

// Unpinned is a runtime fetch that berth refuses only because its package
// is not pinned, in a form that berth can resolve against the registry
// now (berth import --pin): an npm package by dist-tag, range or with no
// version, a PyPI package by specifier or with no version, an image by
// tag. A URL, a path, a git source or an alias is never one.
type Unpinned struct {
	// Tool is the runner: "npx", "uvx", "docker run", ...
	Tool string
	// Ecosystem is EcosystemNPM, EcosystemPyPI or EcosystemOCI.
	Ecosystem string
	// Spec is the package exactly as the command names it.
	Spec string
	// Arg is the index in the command's arguments of the one that holds
	// Spec; Prefix is what stands before Spec in it ("--package=").
	Arg    int
	Prefix string
	// Name is the npm package name, the PyPI project name, or the image
	// reference without its tag.
	Name string
	// Requested is what the source asked for: an npm dist-tag or range,
	// a PEP 440 specifier ("latest" for uvx's pkg@latest), an image tag;
	// "" when it named no version.
	Requested string

	specPrefix string // "npm:" for deno run
	extras     string // PyPI "[cli]"
}

// Extras are a PyPI project's extras as the spec names them ("[cli]").
func (u *Unpinned) Extras() string { return u.extras }

// Pinned is the exact spec a resolution writes in place of an Unpinned
// one: name@1.4.2, name==2025.4.7 or image:tag@sha256:<hex>.
func (u *Unpinned) Pinned(resolved string) string {
	switch u.Ecosystem {
	case EcosystemNPM:
		return u.specPrefix + u.Name + "@" + resolved
	case EcosystemPyPI:
		return u.Name + u.extras + "==" + resolved
	case EcosystemOCI:
		if u.Requested != "" {
			return u.Name + ":" + u.Requested + "@" + resolved
		}
		return u.Name + "@" + resolved
	}
	panic("runtimefetch: Unpinned of ecosystem " + u.Ecosystem)
}

// Apply returns a copy of args with the package pinned to resolved. The
// argument at u.Arg must be the one Read reported.
func (u *Unpinned) Apply(args []string, resolved string) []string {
	if u.Arg < 0 || u.Arg >= len(args) || args[u.Arg] != u.Prefix+u.Spec {
		panic(fmt.Sprintf("runtimefetch: Apply of %q to arguments that do not hold it at %d", u.Spec, u.Arg))
	}
	out := slices.Clone(args)
	out[u.Arg] = u.Prefix + u.Pinned(resolved)
	return out
}

// unpinnedRequest reads a refused package spec as a request berth can
// resolve, or returns nil.
func unpinnedRequest(tool, eco, spec string) *Unpinned {
	u := &Unpinned{Tool: tool, Ecosystem: eco, Spec: spec}
	switch eco {
	case EcosystemNPM:
		rest := spec
		if strings.HasPrefix(tool, "deno") {
			var ok bool
			if rest, ok = strings.CutPrefix(spec, "npm:"); !ok {
				return nil // jsr: and URLs are not resolved
			}
			u.specPrefix = "npm:"
		}
		name, req := rest, ""
		if at := strings.LastIndex(rest, "@"); at > 0 {
			name, req = rest[:at], rest[at+1:]
			if req == "" {
				return nil
			}
		}
		if !npmName.MatchString(name) || !npmRequest(req) {
			return nil
		}
		u.Name, u.Requested = name, req
	case EcosystemPyPI:
		name, req := splitPyPI(spec)
		if name == "" {
			return nil
		}
		base, extras, _ := strings.Cut(name, "[")
		if extras != "" {
			extras = "[" + extras
		}
		u.Name, u.extras, u.Requested = base, extras, req
		if req != "" && req != "latest" {
			if _, err := parseSpecifiers(req); err != nil {
				return nil
			}
		}
	case EcosystemOCI:
		m := imageRef.FindStringSubmatch(spec)
		if m == nil || m[4] != "" {
			return nil
		}
		u.Name, u.Requested = strings.TrimSuffix(spec, ":"+m[3]), m[3]
	default:
		return nil
	}
	return u
}

// npmRequest accepts what berth resolves after name@: a dist-tag (letters,
// digits, '.', '_', '-', not a version) or a semver range. A URL, a path,
// a git or npm: alias is none of them.
func npmRequest(req string) bool {
	if req == "" {
		return true
	}
	if strings.ContainsAny(req, ":/\\#") || strings.HasPrefix(req, "npm:") {
		return false
	}
	if npmTag.MatchString(req) {
		return true
	}
	_, err := npmRange(req)
	return err == nil
}

// splitPyPI splits a uvx or pipx run spec into the name (with extras) and
// the specifier: pkg, pkg@latest, pkg>=1.2, pkg[cli]~=1.0. It returns ""
// for a spec that is not a plain name.
func splitPyPI(spec string) (name, req string) {
	i := strings.IndexAny(spec, "<>=!~@ ;")
	if i < 0 {
		name = spec
	} else {
		name, req = spec[:i], strings.TrimSpace(spec[i:])
		if r, ok := strings.CutPrefix(req, "@"); ok {
			if r != "latest" {
				return "", ""
			}
			req = r
		}
		if req == "" || strings.ContainsAny(req, ";@ ") {
			return "", ""
		}
	}
	if !pyName.MatchString(name) {
		return "", ""
	}
	return name, req
}

// CheckPinned checks a fetch that importedFrom.pinned says berth pinned:
// the source's request (pkg with requested) is one berth resolves, the
// result is exact (a semver or PEP 440 version, a sha256 digest), and the
// command names exactly the spec berth writes for that result.
func CheckPinned(f *Fetch, pkg, requested, resolved string) error {
	var source string
	switch f.Ecosystem {
	case EcosystemNPM:
		source = pkg
		if strings.HasPrefix(f.Package, "npm:") {
			source = "npm:" + pkg
		}
		if requested != "" {
			source += "@" + requested
		}
	case EcosystemPyPI:
		source = pkg
		switch {
		case requested == "latest":
			source += "@latest"
		case requested != "":
			source += requested
		}
	case EcosystemOCI:
		source = pkg
		if requested != "" {
			source += ":" + requested
		}
	default:
		return fmt.Errorf("berth does not pin %s packages (%s)", f.Ecosystem, f.Tool)
	}
	u := unpinnedRequest(f.Tool, f.Ecosystem, source)
	if u == nil || u.Requested != requested {
		return fmt.Errorf("%q with %q is not a request berth pins for %s", pkg, requested, f.Tool)
	}
	var err error
	switch f.Ecosystem {
	case EcosystemNPM:
		err = pinnedNPM(u.Name + "@" + resolved)
	case EcosystemPyPI:
		err = pinnedPython(u.Name + "==" + resolved)
	case EcosystemOCI:
		if !sha256Digest.MatchString(resolved) {
			err = fmt.Errorf("which is not sha256: and 64 lower-case hex digits")
		}
	}
	if err != nil {
		return fmt.Errorf("the resolved %q, %v", resolved, err)
	}
	if want := u.Pinned(resolved); f.Package != want {
		return fmt.Errorf("the command runs %q, not %q, which pinning %q to %s gives", f.Package, want, source, resolved)
	}
	return nil
}

// PinnableSpec returns the spec of a registry package (server.json's
// registryType npm, pypi or oci, identifier and version) as npx, uvx or
// docker run name it, when it is unpinned in a form berth can pin: an npm
// package with no version, a dist-tag or a range, a PyPI package with no
// version, "latest" or a specifier, an image by tag. It returns "" for
// anything else.
func PinnableSpec(registryType, id, version string) string {
	var tool, eco, spec string
	switch registryType {
	case "npm":
		tool, eco, spec = "npx", EcosystemNPM, id
		if version != "" {
			spec += "@" + version
		}
	case "pypi":
		tool, eco, spec = "uvx", EcosystemPyPI, id
		switch {
		case version == "":
		case version == "latest":
			spec += "@latest"
		case strings.ContainsAny(version[:1], "<>=!~"):
			spec += version
		default:
			return ""
		}
	case "oci":
		tool, eco, spec = "docker run", EcosystemOCI, id
	default:
		return ""
	}
	if unpinnedRequest(tool, eco, spec) == nil {
		return ""
	}
	return spec
}
