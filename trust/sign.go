package trust

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/berth-mcp/berth/internal/atomicfile"
)

// GenerateKey generates an ECDSA P-256 key pair for Sign. The private key
// is PKCS#8 PEM ("PRIVATE KEY"), unencrypted: keep it secret. The public
// key is PKIX PEM ("PUBLIC KEY"), for NewKeySigner and
// `berth signers add-key`.
func GenerateKey() (privPEM, pubPEM []byte, err error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating an ECDSA P-256 key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the private key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the public key: %w", err)
	}
	privPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	pubPEM = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	return privPEM, pubPEM, nil
}

// WriteKeyPair generates a key pair with GenerateKey and writes the private
// key to PREFIX.key (mode 0600) and the public key to PREFIX.pub (mode
// 0644). It never overwrites: if either file exists it writes nothing and
// returns an error that wraps fs.ErrExist. Both files are synced before it
// returns.
func WriteKeyPair(prefix string) (keyPath, pubPath string, err error) {
	if prefix == "" {
		return "", "", errors.New("key pair prefix is empty: give a path prefix such as ./acme, which writes acme.key and acme.pub")
	}
	keyPath, pubPath = prefix+".key", prefix+".pub"
	for _, p := range []string{keyPath, pubPath} {
		if _, err := os.Lstat(p); err == nil {
			return "", "", fmt.Errorf("refusing to overwrite %s: %w; choose another prefix or move the existing file away", p, fs.ErrExist)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", "", fmt.Errorf("checking %s: %w", p, err)
		}
	}
	privPEM, pubPEM, err := GenerateKey()
	if err != nil {
		return "", "", err
	}
	if err := writeNew(keyPath, privPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := writeNew(pubPath, pubPEM, 0o644); err != nil {
		os.Remove(keyPath) // we created it just now; leave no half pair
		return "", "", err
	}
	return keyPath, pubPath, nil
}

// writeNew creates path exclusively with mode perm and writes data.
func writeNew(path string, data []byte, perm fs.FileMode) error {
	err := atomicfile.WriteNew(path, data, perm)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("refusing to overwrite %s: %w; choose another prefix or move the existing file away", path, fs.ErrExist)
	}
	return err
}

// Sign signs listing with the PEM private key privPEM and returns a
// Sigstore bundle v0.3 JSON: a message signature with the public key's
// hint (base64 of sha256 of its PKIX DER, as cosign writes), no
// transparency-log entry and no timestamp. privPEM is PKCS#8 ("PRIVATE
// KEY") or SEC1 ("EC PRIVATE KEY"), unencrypted, holding an ECDSA P-256 or
// P-384 key or an RSA key of at least 2048 bits. Key errors wrap
// ErrInvalidKey. The bundle is verified against the public key before it
// is returned.
func Sign(ctx context.Context, listing []byte, privPEM []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	kp, err := newKeypair(privPEM)
	if err != nil {
		return nil, err
	}
	sv, err := loadSignatureVerifier(kp.pub)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	self := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return root.NewExpiringKey(sv, time.Time{}, time.Time{}), nil
	})
	pb, err := sign.Bundle(&sign.PlainData{Data: listing}, kp, sign.BundleOptions{Context: ctx, TrustedRoot: self})
	if err != nil {
		return nil, fmt.Errorf("signing the listing: %w", err)
	}
	b, err := bundle.NewBundle(pb)
	if err != nil {
		return nil, fmt.Errorf("building the signature bundle: %w", err)
	}
	out, err := b.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding the signature bundle: %w", err)
	}
	return out, nil
}

// keypair adapts a loaded private key to sigstore-go's sign.Keypair.
type keypair struct {
	priv    crypto.Signer
	pub     crypto.PublicKey
	hash    crypto.Hash
	hashAlg protocommon.HashAlgorithm
	sigAlg  protocommon.PublicKeyDetails
	keyAlg  string
	hint    []byte
}

var _ sign.Keypair = (*keypair)(nil)

func newKeypair(privPEM []byte) (*keypair, error) {
	priv, err := parsePrivateKeyPEM(privPEM)
	if err != nil {
		return nil, err
	}
	pub := priv.Public()
	if err := checkKeyAlgorithm(pub); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("%w: encoding the public key: %w", ErrInvalidKey, err)
	}
	sum := sha256.Sum256(der)
	kp := &keypair{
		priv: priv,
		pub:  pub,
		hash: hashFor(pub),
		hint: []byte(base64.StdEncoding.EncodeToString(sum[:])),
	}
	kp.hashAlg = protocommon.HashAlgorithm_SHA2_256
	if kp.hash == crypto.SHA384 {
		kp.hashAlg = protocommon.HashAlgorithm_SHA2_384
	}
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		kp.keyAlg = "ECDSA"
		kp.sigAlg = protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256
		if k.Curve == elliptic.P384() {
			kp.sigAlg = protocommon.PublicKeyDetails_PKIX_ECDSA_P384_SHA_384
		}
	case *rsa.PublicKey:
		kp.keyAlg = "RSA"
		switch k.N.BitLen() {
		case 2048:
			kp.sigAlg = protocommon.PublicKeyDetails_PKIX_RSA_PKCS1V15_2048_SHA256
		case 3072:
			kp.sigAlg = protocommon.PublicKeyDetails_PKIX_RSA_PKCS1V15_3072_SHA256
		case 4096:
			kp.sigAlg = protocommon.PublicKeyDetails_PKIX_RSA_PKCS1V15_4096_SHA256
		default:
			// No registered algorithm name; key bundles do not record it.
			kp.sigAlg = protocommon.PublicKeyDetails_PUBLIC_KEY_DETAILS_UNSPECIFIED
		}
	}
	return kp, nil
}

// parsePrivateKeyPEM decodes an unencrypted PKCS#8 or SEC1 private key.
// Errors never include key material.
func parsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block found: give a PEM private key (\"-----BEGIN PRIVATE KEY-----\")", ErrInvalidKey)
	}
	if strings.Contains(block.Type, "ENCRYPTED") || strings.Contains(block.Headers["Proc-Type"], "ENCRYPTED") {
		return nil, fmt.Errorf("%w: the private key is encrypted (PEM type %q), and berth signs only with unencrypted keys: "+
			"decrypt it to PKCS#8 (e.g. `openssl pkcs8 -topk8 -nocrypt -in KEY -out PLAIN.key`) and keep that file private, or generate a new pair with trust.WriteKeyPair",
			ErrInvalidKey, block.Type)
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("%w: PEM block type %q is not supported: give a PKCS#8 \"PRIVATE KEY\" or SEC1 \"EC PRIVATE KEY\"", ErrInvalidKey, block.Type)
	}
	if err != nil {
		// x509 errors describe the structure, not the key bytes.
		return nil, fmt.Errorf("%w: cannot parse the %s PEM block: %w", ErrInvalidKey, block.Type, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%w: key type %T cannot sign", ErrInvalidKey, key)
	}
	return signer, nil
}

func (k *keypair) GetHashAlgorithm() protocommon.HashAlgorithm       { return k.hashAlg }
func (k *keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails { return k.sigAlg }
func (k *keypair) GetHint() []byte                                   { return k.hint }
func (k *keypair) GetKeyAlgorithm() string                           { return k.keyAlg }
func (k *keypair) GetPublicKey() crypto.PublicKey                    { return k.pub }

func (k *keypair) GetPublicKeyPem() (string, error) {
	b, err := cryptoutils.MarshalPublicKeyToPEM(k.pub)
	return string(b), err
}

// SignData hashes data and signs the digest (ECDSA: ASN.1 signature; RSA:
// PKCS#1 v1.5). It returns the signature and the digest.
func (k *keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	h := k.hash.New()
	h.Write(data)
	digest := h.Sum(nil)
	sig, err := k.priv.Sign(rand.Reader, digest, k.hash)
	if err != nil {
		return nil, nil, fmt.Errorf("signing: %w", err)
	}
	return sig, digest, nil
}
