package importer

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/big"

	"github.com/berth-mcp/berth/bundle"
)

// The MCPB signature block (mcpb sign): the zip's bytes, then
// "MCPB_SIG_V1", a little-endian uint32 length N, N bytes of DER PKCS#7
// SignedData (detached, over the zip's bytes) and "MCPB_SIG_END".
const (
	mcpbSigStart = "MCPB_SIG_V1"
	mcpbSigEnd   = "MCPB_SIG_END"
	// maxMCPBSig caps the DER block; certificate chains are a few KiB.
	maxMCPBSig = 1 << 20
	// maxMCPBSigned caps the zip size up to which berth checks the CMS
	// signature (it hashes the zip once more).
	maxMCPBSigned = 1 << 30
)

// mcpbTrailer finds where the zip of a .mcpb ends and reads an appended
// signature block (bundle.Format.ZipTrailer). A block that is cut off,
// doubled, oversized or followed by other bytes is a problem. found is
// false for a file without a block: a plain zip, or bytes after a zip
// that are no block at all (package bundle says so).
func mcpbTrailer(f io.ReaderAt, size int64, zipEnd func(n int64) (int64, bool)) (zipSize int64, sig *bundle.MCPBSignature, ps []*bundle.Problem, found bool) {
	bad := func(format string, args ...any) (int64, *bundle.MCPBSignature, []*bundle.Problem, bool) {
		return 0, nil, []*bundle.Problem{{Path: ".", Rule: bundle.RuleMCPBSignatureBlock, Message: fmt.Sprintf(format, args...)}}, true
	}
	tailLen := min(size, int64(maxMCPBSig+len(mcpbSigStart)+4+len(mcpbSigEnd)))
	tail := make([]byte, tailLen)
	if _, err := f.ReadAt(tail, size-tailLen); err != nil && err != io.EOF {
		return bad("cannot read the end of the file: %v", err)
	}
	if !bytes.HasSuffix(tail, []byte(mcpbSigEnd)) {
		if end, found := zipEnd(size); found && end == size {
			return 0, nil, nil, false
		}
		if bytes.Contains(tail, []byte(mcpbSigStart)) || bytes.Contains(tail, []byte(mcpbSigEnd)) {
			return bad("the file has an MCPB signature block (MCPB_SIG_V1) that is cut off or followed by other bytes; berth reads only an intact block at the very end: re-sign the bundle (mcpb sign) or remove the block (mcpb unsign)")
		}
		// Bytes after the zip, or not a zip: package bundle says so.
		return 0, nil, nil, false
	}
	// Find the header whose length field puts the block's end exactly at
	// the end of the file, scanning back from the end.
	hdr := -1
	body := tail[:len(tail)-len(mcpbSigEnd)]
	for i := bytes.LastIndex(body, []byte(mcpbSigStart)); i >= 0; i = bytes.LastIndex(body[:i], []byte(mcpbSigStart)) {
		if i+len(mcpbSigStart)+4 > len(body) {
			continue
		}
		n := binary.LittleEndian.Uint32(body[i+len(mcpbSigStart):])
		if int64(i)+int64(len(mcpbSigStart))+4+int64(n) == int64(len(body)) {
			hdr = i
			break
		}
	}
	if hdr < 0 {
		return bad("the file ends with MCPB_SIG_END, but no MCPB_SIG_V1 header with a matching length comes before it (the block is cut off, corrupt, or larger than 1 MiB); re-sign the bundle (mcpb sign)")
	}
	zipSize = size - tailLen + int64(hdr)
	der := body[hdr+len(mcpbSigStart)+4:]
	end, found := zipEnd(zipSize)
	switch {
	case !found:
		return bad("the bytes before the MCPB signature block are not a zip; re-create the bundle (mcpb pack) and sign it once")
	case end != zipSize:
		if bytes.Contains(tail[:hdr], []byte(mcpbSigEnd)) || bytes.Contains(tail[:hdr], []byte(mcpbSigStart)) {
			return bad("the file has more than one MCPB signature block; sign the bundle once (mcpb unsign, then mcpb sign)")
		}
		return bad("%d bytes come between the end of the zip and the MCPB signature block; re-create the bundle and sign it once", zipSize-end)
	}
	return zipSize, readMCPBSignature(f, zipSize, der), nil, true
}

// readMCPBSignature parses the CMS signature and checks it over the zip's
// bytes. It never fails: what it cannot check, it says.
func readMCPBSignature(f io.ReaderAt, zipSize int64, der []byte) *bundle.MCPBSignature {
	sig := &bundle.MCPBSignature{Size: len(der)}
	c, err := parseCMS(der)
	if err != nil {
		sig.Problem = "the signature is not a CMS signature berth can read: " + err.Error()
		return sig
	}
	leaf := c.leaf
	sum := sha256.Sum256(leaf.Raw)
	sig.Fingerprint = hex.EncodeToString(sum[:])
	sig.Subject, sig.Issuer = leaf.Subject.String(), leaf.Issuer.String()
	sig.NotBefore, sig.NotAfter = leaf.NotBefore.UTC(), leaf.NotAfter.UTC()
	sig.SelfSigned = bytes.Equal(leaf.RawSubject, leaf.RawIssuer) && leaf.CheckSignatureFrom(leaf) == nil
	if zipSize > maxMCPBSigned {
		sig.Problem = fmt.Sprintf("not checked: the zip is larger than %d MiB", maxMCPBSigned>>20)
		return sig
	}
	h := c.hash.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, zipSize)); err != nil {
		sig.Problem = "not checked: " + err.Error()
		return sig
	}
	if err := c.verify(h.Sum(nil)); err != nil {
		sig.Problem = "the signature does not verify over the zip: " + err.Error()
		return sig
	}
	sig.Verifies = true
	return sig
}

// The CMS (RFC 5652) structures of a detached SignedData, as mcpb sign
// writes them. The signed attributes are kept as raw bytes: node-forge
// writes them in insertion order rather than DER order, and the signature
// is over exactly those bytes.
type cmsContentInfo struct {
	ContentType asn1.ObjectIdentifier
	Content     asn1.RawValue `asn1:"explicit,tag:0"`
}

type cmsSignedData struct {
	Version          int
	DigestAlgorithms asn1.RawValue
	EncapContentInfo asn1.RawValue
	Certificates     asn1.RawValue   `asn1:"optional,tag:0"`
	CRLs             asn1.RawValue   `asn1:"optional,tag:1"`
	SignerInfos      []cmsSignerInfo `asn1:"set"`
}

type cmsSignerInfo struct {
	Version            int
	SID                asn1.RawValue
	DigestAlgorithm    pkix.AlgorithmIdentifier
	SignedAttrs        asn1.RawValue `asn1:"optional,tag:0"`
	SignatureAlgorithm pkix.AlgorithmIdentifier
	Signature          []byte
	UnsignedAttrs      asn1.RawValue `asn1:"optional,tag:1"`
}

type cmsIssuerAndSerial struct {
	Issuer asn1.RawValue
	Serial *big.Int
}

type cmsAttribute struct {
	Type   asn1.ObjectIdentifier
	Values asn1.RawValue `asn1:"set"`
}

var (
	oidSignedData    = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 2}
	oidData          = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	oidContentType   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 3}
	oidMessageDigest = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 4}
	cmsDigests       = map[string]crypto.Hash{
		"2.16.840.1.101.3.4.2.1": crypto.SHA256,
		"2.16.840.1.101.3.4.2.2": crypto.SHA384,
		"2.16.840.1.101.3.4.2.3": crypto.SHA512,
	}
	// cmsSignatures maps a signature algorithm and a digest to x509's.
	cmsSignatures = map[string]map[crypto.Hash]x509.SignatureAlgorithm{
		"1.2.840.113549.1.1.1":  {crypto.SHA256: x509.SHA256WithRSA, crypto.SHA384: x509.SHA384WithRSA, crypto.SHA512: x509.SHA512WithRSA},
		"1.2.840.113549.1.1.11": {crypto.SHA256: x509.SHA256WithRSA},
		"1.2.840.113549.1.1.12": {crypto.SHA384: x509.SHA384WithRSA},
		"1.2.840.113549.1.1.13": {crypto.SHA512: x509.SHA512WithRSA},
		"1.2.840.10045.2.1":     {crypto.SHA256: x509.ECDSAWithSHA256, crypto.SHA384: x509.ECDSAWithSHA384, crypto.SHA512: x509.ECDSAWithSHA512},
		"1.2.840.10045.4.3.2":   {crypto.SHA256: x509.ECDSAWithSHA256},
		"1.2.840.10045.4.3.3":   {crypto.SHA384: x509.ECDSAWithSHA384},
		"1.2.840.10045.4.3.4":   {crypto.SHA512: x509.ECDSAWithSHA512},
	}
)

type cms struct {
	leaf   *x509.Certificate
	signer cmsSignerInfo
	hash   crypto.Hash
	sigAlg x509.SignatureAlgorithm
}

// parseCMS reads a detached SignedData with one signer whose certificate
// it carries.
func parseCMS(der []byte) (*cms, error) {
	var ci cmsContentInfo
	if rest, err := asn1.Unmarshal(der, &ci); err != nil || len(rest) > 0 || !ci.ContentType.Equal(oidSignedData) {
		return nil, errors.New("not a CMS SignedData")
	}
	var sd cmsSignedData
	if rest, err := asn1.Unmarshal(ci.Content.Bytes, &sd); err != nil || len(rest) > 0 {
		return nil, errors.New("malformed SignedData")
	}
	if len(sd.SignerInfos) != 1 {
		return nil, fmt.Errorf("%d signers; berth reads signatures with one", len(sd.SignerInfos))
	}
	si := sd.SignerInfos[0]
	var certs []*x509.Certificate
	for b := sd.Certificates.Bytes; len(b) > 0; {
		var raw asn1.RawValue
		var err error
		if b, err = asn1.Unmarshal(b, &raw); err != nil {
			return nil, errors.New("malformed certificate list")
		}
		cert, err := x509.ParseCertificate(raw.FullBytes)
		if err != nil {
			return nil, fmt.Errorf("a certificate does not parse: %v", err)
		}
		certs = append(certs, cert)
	}
	c := &cms{signer: si}
	switch {
	case si.SID.Class == asn1.ClassUniversal && si.SID.Tag == asn1.TagSequence:
		var ias cmsIssuerAndSerial
		if _, err := asn1.Unmarshal(si.SID.FullBytes, &ias); err != nil {
			return nil, errors.New("malformed signer identifier")
		}
		for _, cert := range certs {
			if bytes.Equal(cert.RawIssuer, ias.Issuer.FullBytes) && cert.SerialNumber.Cmp(ias.Serial) == 0 {
				c.leaf = cert
			}
		}
	case si.SID.Class == asn1.ClassContextSpecific && si.SID.Tag == 0:
		for _, cert := range certs {
			if len(cert.SubjectKeyId) > 0 && bytes.Equal(cert.SubjectKeyId, si.SID.Bytes) {
				c.leaf = cert
			}
		}
	}
	if c.leaf == nil {
		return nil, errors.New("the signature does not carry its signer's certificate")
	}
	var ok bool
	if c.hash, ok = cmsDigests[si.DigestAlgorithm.Algorithm.String()]; !ok {
		return nil, fmt.Errorf("digest algorithm %s is not SHA-256, -384 or -512", si.DigestAlgorithm.Algorithm)
	}
	if c.sigAlg, ok = cmsSignatures[si.SignatureAlgorithm.Algorithm.String()][c.hash]; !ok {
		return nil, fmt.Errorf("signature algorithm %s with this digest is not RSA or ECDSA", si.SignatureAlgorithm.Algorithm)
	}
	return c, nil
}

// verify checks the signature for the digest of the content.
func (c *cms) verify(digest []byte) error {
	si := c.signer
	if len(si.SignedAttrs.FullBytes) == 0 {
		return errors.New("the signature has no signed attributes (mcpb sign always writes them)")
	}
	// The signature covers the attributes as a SET, not with the
	// [0] IMPLICIT tag they carry in SignerInfo.
	signed := bytes.Clone(si.SignedAttrs.FullBytes)
	signed[0] = 0x31
	var attrs []cmsAttribute
	if rest, err := asn1.UnmarshalWithParams(signed, &attrs, "set"); err != nil || len(rest) > 0 {
		return errors.New("malformed signed attributes")
	}
	var md []byte
	var ct asn1.ObjectIdentifier
	for _, a := range attrs {
		switch {
		case a.Type.Equal(oidMessageDigest):
			if _, err := asn1.Unmarshal(a.Values.Bytes, &md); err != nil {
				return errors.New("malformed message digest")
			}
		case a.Type.Equal(oidContentType):
			if _, err := asn1.Unmarshal(a.Values.Bytes, &ct); err != nil {
				return errors.New("malformed content type")
			}
		}
	}
	if !ct.Equal(oidData) {
		return errors.New("the signed content type is not data")
	}
	if !bytes.Equal(md, digest) {
		return errors.New("the signed digest is not the zip's: the zip was changed after it was signed")
	}
	return c.leaf.CheckSignature(c.sigAlg, signed, si.Signature)
}
