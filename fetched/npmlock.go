package fetched

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// npmLockfile is the part of npm's package-lock.json (lockfileVersion 2
// or 3) that berth reads.
type npmLockfile struct {
	LockfileVersion int                       `json:"lockfileVersion"`
	Packages        map[string]npmLockPackage `json:"packages"`
}

type npmLockPackage struct {
	Name             string `json:"name"`
	Version          string `json:"version"`
	Resolved         string `json:"resolved"`
	Integrity        string `json:"integrity"`
	Link             bool   `json:"link"`
	HasInstallScript bool   `json:"hasInstallScript"`
}

// npmLockPath is an installed package's key in the lock:
// node_modules/<name>(/node_modules/<name>)*, each name plain or scoped.
var npmLockPath = regexp.MustCompile(`^node_modules/(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*(/node_modules/(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*)*$`)

// npmVersion is an exact semver version as npm records it.
var npmVersion = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// sha512SRI is a single sha512 SRI hash: npm's integrity of a registry
// tarball.
var sha512SRI = regexp.MustCompile(`^sha512-[A-Za-z0-9+/]{86}==$`)

// maxLockSize caps the package-lock.json berth reads.
const maxLockSize = 64 << 20

// ParseNPMLock reads an npm package-lock.json (untrusted: npm wrote it
// from what the registry said) and returns every installed package,
// sorted, refusing what berth does not stage: a package that is a link,
// a file: or git dependency, one resolved outside registry (an absolute
// URL ending in "/"), one without a single sha512 integrity. A package
// with install scripts has Scripts set; the caller decides about it.
func ParseNPMLock(data []byte, registry string) ([]Package, error) {
	if len(data) > maxLockSize {
		return nil, fmt.Errorf("package-lock.json is larger than %d bytes", maxLockSize)
	}
	reg, err := url.Parse(registry)
	if err != nil || (reg.Scheme != "https" && reg.Scheme != "http") || reg.Host == "" || !strings.HasSuffix(reg.Path, "/") || reg.RawQuery != "" || reg.Fragment != "" || reg.User != nil || reg.String() != registry {
		return nil, fmt.Errorf("the registry %q is not an http(s) URL ending in \"/\", with no user or password in it", RedactURL(registry))
	}
	var lf npmLockfile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&lf); err != nil {
		return nil, fmt.Errorf("package-lock.json: %v", err)
	}
	if lf.LockfileVersion != 2 && lf.LockfileVersion != 3 {
		return nil, fmt.Errorf("package-lock.json has lockfileVersion %d; berth reads 2 and 3 (npm 7 and later)", lf.LockfileVersion)
	}
	out := make([]Package, 0, len(lf.Packages))
	for key, p := range lf.Packages {
		if key == "" {
			continue // berth's own package.json
		}
		if !npmLockPath.MatchString(key) {
			return nil, fmt.Errorf("package-lock.json installs %q, which is not a path under node_modules (a workspace, a file: or link dependency); berth stages registry packages only", key)
		}
		name := key[strings.LastIndex(key, "node_modules/")+len("node_modules/"):]
		if p.Link {
			return nil, fmt.Errorf("%s is a link to %q, not a registry package; berth stages registry packages only", key, p.Resolved)
		}
		if !npmVersion.MatchString(p.Version) {
			return nil, fmt.Errorf("%s has the version %q, not an exact version", key, p.Version)
		}
		u, err := url.Parse(p.Resolved)
		if err != nil || u.Scheme != reg.Scheme || u.Host != reg.Host || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
			!strings.HasPrefix(u.Path, reg.Path) || path.Clean(u.Path) != u.Path || !strings.HasSuffix(u.Path, ".tgz") {
			return nil, fmt.Errorf("%s@%s was resolved from %q, not a tarball of the registry %s (a git, file: or URL dependency?); berth stages registry packages only", name, p.Version, RedactURL(p.Resolved), RedactURL(registry))
		}
		if !sha512SRI.MatchString(p.Integrity) {
			return nil, fmt.Errorf("%s@%s has no sha512 integrity in the lock (%q); berth records every package with its registry's sha512 hash, so it refuses this one (the registry gave only an older hash?)", name, p.Version, p.Integrity)
		}
		if p.Name != "" && p.Name != name {
			return nil, fmt.Errorf("%s is installed under another name (%q, an npm: alias); berth stages packages under their own names only", key, p.Name)
		}
		out = append(out, Package{Name: name, Version: strings.TrimPrefix(p.Version, "v"), Path: key, Resolved: p.Resolved, Integrity: p.Integrity, Scripts: p.HasInstallScript})
	}
	SortPackages(out)
	return out, nil
}
