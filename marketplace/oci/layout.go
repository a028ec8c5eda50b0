package oci

import "strings"

// The media and artifact types of berth's OCI layout (docs/marketplace.md,
// "Catalogs in an OCI registry").
const (
	// ArtifactTypeCatalog is the artifactType of the image index a
	// catalog's tag points at.
	ArtifactTypeCatalog = "application/vnd.berth.catalog.v1"
	// ArtifactTypeMetadata is the artifactType of the manifest that
	// carries a catalog's TUF metadata and catalog target.
	ArtifactTypeMetadata = "application/vnd.berth.catalog.metadata.v1"
	// ArtifactTypeBundles is the artifactType of the image index that
	// lists a catalog's bundle manifests (read only to install).
	ArtifactTypeBundles = "application/vnd.berth.catalog.bundles.v1"
	// MediaTypeTUF is a layer holding one TUF metadata file.
	MediaTypeTUF = "application/vnd.berth.tuf.metadata.v1+json"
	// MediaTypeCatalogTarget is a layer holding targets/<sha256>.catalog.json.
	MediaTypeCatalogTarget = "application/vnd.berth.catalog.v1+json"
	// ArtifactTypeBundle is the artifactType of a bundle's manifest.
	ArtifactTypeBundle = "application/vnd.berth.bundle.v1"
	// MediaTypeBundleLayer is the layer holding a bundle's archive as
	// .tar.gz (or .tgz); MediaTypeBundleLayerZip as .zip (or an MCP
	// Bundle's .mcpb).
	MediaTypeBundleLayer    = "application/vnd.berth.bundle.v1.tar+gzip"
	MediaTypeBundleLayerZip = "application/vnd.berth.bundle.v1.zip"
	// ArtifactTypeSigstore is the artifactType (and layer media type) of
	// the referrer that carries a bundle's Sigstore bundle, as Sigstore
	// itself names it.
	ArtifactTypeSigstore = "application/vnd.dev.sigstore.bundle.v0.3+json"

	// AnnotationTitle names the path of a file relative to the catalog
	// root (OCI's own annotation).
	AnnotationTitle = "org.opencontainers.image.title"
	// AnnotationName and AnnotationVersion name a bundle's plugin and
	// version.
	AnnotationName    = "dev.berth.name"
	AnnotationVersion = "dev.berth.version"
)

// Limits on what berth reads from a registry before it knows a size from
// signed metadata.
const (
	// MaxManifest bounds an index or manifest.
	MaxManifest = 4 << 20
	// MaxSignature bounds a Sigstore bundle.
	MaxSignature = 1 << 20
	// MaxArchive bounds a bundle archive.
	MaxArchive = 1 << 30
	// MaxMetadataFile bounds a metadata file or catalog target as the
	// metadata manifest lists it (the catalog target's own limit; the
	// caller's TUF limits are lower for the roles).
	MaxMetadataFile = 64 << 20
)

// archiveMediaType is the layer media type of an archive by its name:
// .tar.gz and .tgz, .zip and .mcpb, as berth reads them; "" for another.
func archiveMediaType(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, ".tar.gz"), strings.HasSuffix(n, ".tgz"):
		return MediaTypeBundleLayer
	case strings.HasSuffix(n, ".zip"), strings.HasSuffix(n, ".mcpb"):
		return MediaTypeBundleLayerZip
	}
	return ""
}
