package trust_test

import (
	"context"
	"errors"
	"testing"

	"github.com/berth-mcp/berth/internal/sigtest"
	"github.com/berth-mcp/berth/trust"
)

// FuzzVerifySignatureJSON feeds arbitrary signature bundles to Verify under
// a policy with two key signers and one identity signer. Verify must never
// panic, must wrap ErrUntrusted in every error, and may only succeed with a
// complete Result.
//
// Seeds: the cosign fixture and a trust.Sign bundle (also committed in
// testdata/fuzz/FuzzVerifySignatureJSON), and a VirtualSigstore identity
// bundle made at run time (its certificates expire).
func FuzzVerifySignatureJSON(f *testing.F) {
	ctx := context.Background()
	cos := loadCosign(f)
	kf := loadKeyFixture(f)
	vsig := sigtest.NewVirtualSigstore(f)
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Add(vsig.SignIdentity(f, testSAN, testIssuer, cos.listing, sigtest.IdentityOpts{}))
	f.Add(vsig.SignIdentity(f, testSAN, testIssuer, cos.listing, sigtest.IdentityOpts{WithTlog: true}))
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`))

	v := mustVerifier(f, []trust.Signer{
		mustKeySigner(f, "cosign", cos.pub, nil),
		mustKeySigner(f, "berth-test", kf.pub, nil),
		identitySigner(f, "ci", testIssuer, testSAN, "", vsig.RootPath),
	}, nil)

	f.Fuzz(func(t *testing.T, sigJSON []byte) {
		res, err := v.Verify(ctx, cos.listing, sigJSON)
		if err != nil {
			if res != nil {
				t.Errorf("result with an error: %+v", res)
			}
			if !errors.Is(err, trust.ErrUntrusted) {
				t.Errorf("error does not wrap ErrUntrusted: %v", err)
			}
			return
		}
		if res == nil || res.Signer.Name == "" || res.ArtifactDigest != cos.digest || res.MediaType == "" {
			t.Errorf("incomplete result for an accepted signature: %+v", res)
		}
	})
}
