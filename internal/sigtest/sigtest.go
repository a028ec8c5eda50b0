// Package sigtest makes real Sigstore signatures for tests: certificate
// bundles from sigstore-go's in-memory VirtualSigstore (a Fulcio, a TSA and
// a Rekor log), written as v0.3 JSON with a trusted_root.json beside them,
// so verification goes through the same file-loading path as production.
// Import it only from _test.go files.
package sigtest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"google.golang.org/protobuf/encoding/protojson"
)

// ecKeypair adapts a VirtualSigstore leaf key to sign.Keypair.
type ecKeypair struct{ priv *ecdsa.PrivateKey }

func (k ecKeypair) GetHashAlgorithm() protocommon.HashAlgorithm {
	return protocommon.HashAlgorithm_SHA2_256
}
func (k ecKeypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256
}
func (k ecKeypair) GetHint() []byte                { return nil }
func (k ecKeypair) GetKeyAlgorithm() string        { return "ECDSA" }
func (k ecKeypair) GetPublicKey() crypto.PublicKey { return k.priv.Public() }
func (k ecKeypair) GetPublicKeyPem() (string, error) {
	b, err := cryptoutils.MarshalPublicKeyToPEM(k.priv.Public())
	return string(b), err
}
func (k ecKeypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	d := sha256.Sum256(data)
	sig, err := ecdsa.SignASN1(rand.Reader, k.priv, d[:])
	return sig, d[:], err
}

// staticCert is a sign.CertificateProvider returning a pre-made leaf.
type staticCert struct{ der []byte }

func (s staticCert) GetCertificate(context.Context, sign.Keypair, *sign.CertificateProviderOptions) ([]byte, error) {
	return s.der, nil
}

// VirtualSigstore is an in-memory Fulcio + TSA + Rekor whose trusted root
// is written to a trusted_root.json file, so verification goes through the
// same file-loading path as production. Its certificates live minutes:
// it is always made inside the test run.
type VirtualSigstore struct {
	VS       *ca.VirtualSigstore
	RootPath string
}

// NewVirtualSigstore starts a virtual Sigstore and writes its trusted root.
func NewVirtualSigstore(tb testing.TB) *VirtualSigstore {
	tb.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		tb.Fatal(err)
	}
	// VirtualSigstore sets TransparencyLog.ID to the hex string's bytes
	// rather than the raw key ID, which a trusted_root.json round trip
	// turns into a different log ID; use the raw bytes.
	rekorLogs := vs.RekorLogs()
	for hexID, l := range rekorLogs {
		raw, err := hex.DecodeString(hexID)
		if err != nil {
			tb.Fatal(err)
		}
		l.ID = raw
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), vs.CTLogs(),
		vs.TimestampingAuthorities(), rekorLogs)
	if err != nil {
		tb.Fatal(err)
	}
	trJSON, err := tr.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(tb.TempDir(), "trusted_root.json")
	if err := os.WriteFile(p, trJSON, 0o644); err != nil {
		tb.Fatal(err)
	}
	return &VirtualSigstore{VS: vs, RootPath: p}
}

// IdentityOpts shape a certificate bundle.
type IdentityOpts struct {
	NoTSA    bool // omit the RFC 3161 timestamp
	WithTlog bool // add a hashedrekord transparency-log entry with SET and inclusion proof
	BadTlog  bool // add a tlog entry for a different signature
}

// SignIdentity returns a v0.3 JSON certificate bundle over listing for the
// identity (san, issuer), as in reference §2.3.
func (v *VirtualSigstore) SignIdentity(tb testing.TB, san, issuer string, listing []byte, o IdentityOpts) []byte {
	tb.Helper()
	leaf, priv, err := v.VS.GenerateLeafCert(san, issuer)
	if err != nil {
		tb.Fatal(err)
	}
	pb, err := sign.Bundle(&sign.PlainData{Data: listing}, ecKeypair{priv.(*ecdsa.PrivateKey)}, sign.BundleOptions{
		CertificateProvider:        staticCert{leaf.Raw},
		CertificateProviderOptions: &sign.CertificateProviderOptions{},
	})
	if err != nil {
		tb.Fatal(err)
	}
	sig := pb.GetMessageSignature().GetSignature()
	if !o.NoTSA {
		tsr, err := v.VS.TimestampResponse(sig)
		if err != nil {
			tb.Fatal(err)
		}
		pb.VerificationMaterial.TimestampVerificationData = &protobundle.TimestampVerificationData{
			Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: tsr}},
		}
	}
	switch {
	case o.WithTlog:
		pb.VerificationMaterial.TlogEntries = []*protorekor.TransparencyLogEntry{v.tlogEntry(tb, leaf, listing, sig)}
	case o.BadTlog:
		// A genuine log entry, but for another signature by the same certificate.
		other := []byte("other content")
		otherSig, _, err := ecKeypair{priv.(*ecdsa.PrivateKey)}.SignData(context.Background(), other)
		if err != nil {
			tb.Fatal(err)
		}
		pb.VerificationMaterial.TlogEntries = []*protorekor.TransparencyLogEntry{v.tlogEntry(tb, leaf, other, otherSig)}
	}
	out, err := protojson.Marshal(pb)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// tlogEntry makes a Rekor v1 hashedrekord entry in the virtual log, with an
// inclusion promise (SET) and an inclusion proof, as a v0.3 bundle needs.
func (v *VirtualSigstore) tlogEntry(tb testing.TB, leaf *x509.Certificate, artifact, sig []byte) *protorekor.TransparencyLogEntry {
	tb.Helper()
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})
	sum := sha256.Sum256(artifact)
	body, err := json.Marshal(map[string]any{ // map keys marshal sorted: canonical JSON
		"apiVersion": "0.0.1",
		"kind":       "hashedrekord",
		"spec": map[string]any{
			"data": map[string]any{"hash": map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(sum[:])}},
			"signature": map[string]any{
				"content":   base64.StdEncoding.EncodeToString(sig),
				"publicKey": map[string]any{"content": base64.StdEncoding.EncodeToString(certPEM)},
			},
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	logID, err := v.VS.RekorLogID()
	if err != nil {
		tb.Fatal(err)
	}
	logIDRaw, err := hex.DecodeString(logID)
	if err != nil {
		tb.Fatal(err)
	}
	integrated, logIndex := time.Now().Unix(), int64(0)
	set, err := v.VS.RekorSignPayload(tlog.RekorPayload{
		Body: base64.StdEncoding.EncodeToString(body), IntegratedTime: integrated, LogIndex: logIndex, LogID: logID,
	})
	if err != nil {
		tb.Fatal(err)
	}
	proof, err := v.VS.GetInclusionProof(body)
	if err != nil {
		tb.Fatal(err)
	}
	//lint:ignore SA1019 a Rekor v1 entry is what this fake log makes; NewTlogEntry takes a whole protobuf entry
	entry, err := tlog.NewEntry(body, integrated, logIndex, logIDRaw, set, proof)
	if err != nil {
		tb.Fatal(err)
	}
	tle := entry.TransparencyLogEntry()
	tle.KindVersion = &protorekor.KindVersion{Kind: "hashedrekord", Version: "0.0.1"}
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	return tle
}
