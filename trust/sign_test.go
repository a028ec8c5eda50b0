package trust_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/trust"
)

var update = flag.Bool("update", false, "rewrite testdata/key and the fuzz seed corpus")

func TestSignVerifyRoundTrip(t *testing.T) {
	ctx := context.Background()
	listing := loadCosign(t).listing
	priv, pub, err := trust.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	sig, err := trust.Sign(ctx, listing, priv)
	if err != nil {
		t.Fatal(err)
	}
	s := mustKeySigner(t, "acme", pub, nil)
	res, err := mustVerifier(t, []trust.Signer{s}, nil).Verify(ctx, listing, sig)
	if err != nil {
		t.Fatal(err)
	}
	if res.Signer.Name != "acme" || res.KeyFingerprint != s.Fingerprint {
		t.Errorf("unexpected result %+v", res)
	}

	// The bundle has cosign's shape: v0.3, public-key hint, message
	// signature, no tlog entry, no timestamp.
	var doc struct {
		MediaType            string `json:"mediaType"`
		VerificationMaterial struct {
			PublicKey struct {
				Hint string `json:"hint"`
			} `json:"publicKey"`
			TlogEntries               []any `json:"tlogEntries"`
			TimestampVerificationData any   `json:"timestampVerificationData"`
		} `json:"verificationMaterial"`
		MessageSignature struct {
			MessageDigest struct {
				Algorithm string `json:"algorithm"`
				Digest    []byte `json:"digest"`
			} `json:"messageDigest"`
		} `json:"messageSignature"`
	}
	if err := json.Unmarshal(sig, &doc); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pub)
	hint := sha256.Sum256(block.Bytes)
	sum := sha256.Sum256(listing)
	vm := doc.VerificationMaterial
	if doc.MediaType != trust.BundleMediaType || vm.PublicKey.Hint != base64.StdEncoding.EncodeToString(hint[:]) ||
		vm.TlogEntries != nil || vm.TimestampVerificationData != nil ||
		doc.MessageSignature.MessageDigest.Algorithm != "SHA2_256" || !bytes.Equal(doc.MessageSignature.MessageDigest.Digest, sum[:]) {
		t.Errorf("unexpected bundle: %s", sig)
	}

	// Another key's signer rejects it.
	_, otherPub, _ := trust.GenerateKey()
	_, err = mustVerifier(t, []trust.Signer{mustKeySigner(t, "other", otherPub, nil)}, nil).Verify(ctx, listing, sig)
	if !errors.Is(err, trust.ErrUntrusted) {
		t.Errorf("other key: err = %v", err)
	}
}

func TestGenerateKey(t *testing.T) {
	priv, pub, err := trust.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := pem.Decode(priv)
	if pb == nil || pb.Type != "PRIVATE KEY" {
		t.Fatalf("private key is not a PKCS#8 PEM block: %q", priv[:min(len(priv), 30)])
	}
	k, err := x509.ParsePKCS8PrivateKey(pb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok || ek.Curve != elliptic.P256() {
		t.Fatalf("key is %T, want ECDSA P-256", k)
	}
	ub, _ := pem.Decode(pub)
	if ub == nil || ub.Type != "PUBLIC KEY" {
		t.Fatal("public key is not a PKIX PEM block")
	}
	p, err := x509.ParsePKIXPublicKey(ub.Bytes)
	if err != nil || !ek.PublicKey.Equal(p) {
		t.Fatalf("public key does not match the private key (%v)", err)
	}
}

func pemPKCS8(tb testing.TB, key any) []byte {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func TestSignKeyFormats(t *testing.T) {
	ctx := context.Background()
	listing := []byte("100644 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03 6 lib/data.txt\n")

	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsa2048, _ := rsa.GenerateKey(rand.Reader, 2048)
	sec1, _ := x509.MarshalECPrivateKey(p256)

	good := []struct {
		name    string
		priv    []byte
		pub     any
		hashAlg string
	}{
		{"PKCS#8 P-256", pemPKCS8(t, p256), p256.Public(), "SHA2_256"},
		{"PKCS#8 P-384", pemPKCS8(t, p384), p384.Public(), "SHA2_384"},
		{"PKCS#8 RSA 2048", pemPKCS8(t, rsa2048), rsa2048.Public(), "SHA2_256"},
		{"SEC1 P-256", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}), p256.Public(), "SHA2_256"},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			sig, err := trust.Sign(ctx, listing, tc.priv)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(sig), `"algorithm":"`+tc.hashAlg+`"`) && !strings.Contains(string(sig), `"algorithm": "`+tc.hashAlg+`"`) {
				t.Errorf("bundle does not use %s: %s", tc.hashAlg, sig)
			}
			v := mustVerifier(t, []trust.Signer{mustKeySigner(t, "k", pemPublic(t, tc.pub), nil)}, nil)
			if _, err := v.Verify(ctx, listing, sig); err != nil {
				t.Fatal(err)
			}
		})
	}

	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	encrypted := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{0x30, 0x00}})
	legacyEncrypted := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-256-CBC,00"}, Bytes: sec1})
	cosignEncrypted := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED SIGSTORE PRIVATE KEY", Bytes: []byte("{}")})
	bad := []struct {
		name string
		priv []byte
		want string
	}{
		{"not PEM", []byte("not a key"), "no PEM block"},
		{"PKCS#8 encrypted", encrypted, "encrypted"},
		{"legacy encrypted PEM", legacyEncrypted, "encrypted"},
		{"cosign encrypted", cosignEncrypted, "encrypted"},
		{"public key", pemPublic(t, p256.Public()), `"PUBLIC KEY" is not supported`},
		{"P-224", pemPKCS8(t, p224), "P-224 is not supported"},
		{"garbage PKCS#8", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}}), "cannot parse"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trust.Sign(ctx, listing, tc.priv)
			if !errors.Is(err, trust.ErrInvalidKey) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrInvalidKey mentioning %q", err, tc.want)
			}
		})
	}

	// Errors never echo key material.
	_, err := trust.Sign(ctx, listing, pemPKCS8(t, p224))
	der, _ := x509.MarshalPKCS8PrivateKey(p224)
	if err == nil || strings.Contains(err.Error(), base64.StdEncoding.EncodeToString(der)[:20]) {
		t.Errorf("error leaks key material or is nil: %v", err)
	}
}

func TestWriteKeyPair(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "acme")
	keyPath, pubPath, err := trust.WriteKeyPair(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if keyPath != prefix+".key" || pubPath != prefix+".pub" {
		t.Errorf("paths = %s, %s", keyPath, pubPath)
	}
	for path, mode := range map[string]fs.FileMode{keyPath: 0o600, pubPath: 0o644} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s has mode %v, want %v", path, fi.Mode().Perm(), mode)
		}
	}

	// The written pair signs and verifies.
	ctx := context.Background()
	listing := []byte("100644 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03 6 lib/data.txt\n")
	sig, err := trust.Sign(ctx, listing, readFile(t, keyPath))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustVerifier(t, []trust.Signer{mustKeySigner(t, "acme", readFile(t, pubPath), nil)}, nil).Verify(ctx, listing, sig); err != nil {
		t.Fatal(err)
	}

	// It refuses to overwrite either file, and leaves both untouched.
	keyBefore, pubBefore := readFile(t, keyPath), readFile(t, pubPath)
	_, _, err = trust.WriteKeyPair(prefix)
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("second WriteKeyPair: err = %v, want a refusal wrapping fs.ErrExist", err)
	}
	if !bytes.Equal(keyBefore, readFile(t, keyPath)) || !bytes.Equal(pubBefore, readFile(t, pubPath)) {
		t.Error("WriteKeyPair changed existing files")
	}

	// Only PREFIX.pub exists: refused, and no .key is left behind.
	prefix2 := filepath.Join(dir, "half")
	if err := os.WriteFile(prefix2+".pub", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := trust.WriteKeyPair(prefix2); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), prefix2+".pub") {
		t.Errorf("existing .pub: err = %v", err)
	}
	if _, err := os.Stat(prefix2 + ".key"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a .key was left behind: %v", err)
	}

	// A symlink at PREFIX.key counts as existing (no write through it).
	prefix3 := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "target"), prefix3+".key"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := trust.WriteKeyPair(prefix3); !errors.Is(err, fs.ErrExist) {
		t.Errorf("dangling symlink: err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "target")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("WriteKeyPair wrote through a symlink")
	}

	if _, _, err := trust.WriteKeyPair(""); err == nil {
		t.Error("empty prefix accepted")
	}
}

// TestFixtures checks the committed key fixture and the fuzz seed corpus,
// and rewrites them with -update.
func TestFixtures(t *testing.T) {
	if *update {
		writeFixtures(t)
	}
	ctx := context.Background()
	kf := loadKeyFixture(t)
	if !bytes.Equal(kf.listing, loadCosign(t).listing) {
		t.Error("testdata/key/listing.txt differs from the cosign listing")
	}
	v := mustVerifier(t, []trust.Signer{mustKeySigner(t, "berth-test", kf.pub, nil)}, nil)
	if _, err := v.Verify(ctx, kf.listing, kf.sig); err != nil {
		t.Fatalf("committed key fixture does not verify (regenerate with -update): %v", err)
	}
	for name, want := range fuzzSeeds(t) {
		got, err := os.ReadFile(filepath.Join("testdata/fuzz/FuzzVerifySignatureJSON", name))
		if err != nil || !bytes.Equal(got, corpusFile(want)) {
			t.Errorf("fuzz seed %s is missing or stale (regenerate with -update): %v", name, err)
		}
	}
}

// fuzzSeeds are the committed seeds of FuzzVerifySignatureJSON, by file name.
func fuzzSeeds(tb testing.TB) map[string][]byte {
	return map[string][]byte{
		"cosign":     loadCosign(tb).sig,
		"berth-sign": loadKeyFixture(tb).sig,
	}
}

// corpusFile encodes one []byte value in Go's fuzz corpus format.
func corpusFile(b []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b)
}

func writeFixtures(t *testing.T) {
	dir := "testdata/key"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	priv, pub, err := trust.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	listing := loadCosign(t).listing
	sig, err := trust.Sign(context.Background(), listing, priv)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"test.key": priv, "test.pub": pub, "listing.txt": listing, "listing.txt.sigstore.json": sig,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	corpus := "testdata/fuzz/FuzzVerifySignatureJSON"
	if err := os.MkdirAll(corpus, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, seed := range fuzzSeeds(t) {
		if err := os.WriteFile(filepath.Join(corpus, name), corpusFile(seed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
