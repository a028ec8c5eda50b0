# berth — see README.md. Every target works on a fresh machine with Go 1.26.
GO      ?= go
FUZZTIME ?= 20s
BIN     ?= bin/berth
# staticcheck, run at a pinned version so a fresh machine needs only Go.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: build test fuzz bench lint demo peers clean builtin-catalog release

build:
	$(GO) build -o $(BIN) ./cmd/berth

# The README's first command: berth's main job end to end on the built-in
# example, in a temporary BERTH_HOME and workspace.
demo:
	$(GO) run ./examples/demo

# The test command of the README and of CI: go test -race through
# internal/testsummary, which prints each package's result and the output
# of failed tests, and ends with one line saying how many real-peer tests
# (npm MCP peers, a Secret Service) were skipped and why. A package gets
# 20 minutes (go test's default is 10), since CI's two cores run them all
# at once; a test still running when its package fails is shown.
test:
	$(GO) vet ./...
	$(GO) run ./internal/testsummary -race -timeout 20m ./...

# Every fuzz target, for a short time each.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  list=$$($(GO) test -list '^Fuzz' $$pkg); \
	  for t in $$(echo "$$list" | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t"; \
	    $(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done

# Benchmarks; see bench/README.md for the side-by-side comparisons.
bench:
	$(GO) test -run='^$$' -bench=. -benchtime=10x ./...

lint:
	@files=$$(git ls-files '*.go') && [ -n "$$files" ] || { echo "lint: git ls-files found no Go files; run make lint in a git checkout"; exit 1; }; \
	out=$$(gofmt -l $$files); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# The built-in catalog (docs/marketplace.md, "The built-in catalog"):
# pins each reference server to the npm registry's newest version and its
# tarball integrity, prints the authority diff of every entry, and
# rewrites marketplace/builtin. ARGS=-check changes nothing (exit 5 when
# it would).
builtin-catalog:
	$(GO) run ./internal/builtingen $(ARGS)
	$(GO) test ./marketplace/builtin

# The release: static binaries (CGO_ENABLED=0) for linux and darwin
# (amd64, arm64) and windows (amd64) in $(DIST), SHA256SUMS, and its
# signature SHA256SUMS.sigstore.json (berth's own signing, cosign's bundle
# format), and BUILDINFO (the Go that built them, listed in SHA256SUMS);
# reproducible (-trimpath, -buildvcs=false, no build ID, the version stamp
# from VERSION (default: berth's version), GOAMD64/GOARM64/GOEXPERIMENT/
# GOFIPS140/CGO_* pinned). RELEASE_KEY is the PEM private key that
# signs; without one, a throwaway key made for the run signs (what CI
# does: it checks the build and the signing, and publishes nothing).
# RELEASE_FLAGS=-check builds again with an empty build cache and fails
# unless the checksums are the same. See scripts/release and the README.
VERSION ?=
DIST ?= dist
RELEASE_KEY ?=
RELEASE_FLAGS ?=
release:
	$(GO) run ./scripts/release -out $(DIST) $(if $(VERSION),-version $(VERSION)) \
	  $(if $(RELEASE_KEY),-key $(RELEASE_KEY),-throwaway-key) $(RELEASE_FLAGS)

# The npm test peers (server-everything, Inspector, conformance, Node 22).
peers:
	scripts/install-peers

clean:
	rm -rf bin $(DIST)
