package trust_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/berth-mcp/berth/trust"
)

// A publisher signs a bundle's canonical listing with a key; an operator
// who trusts that key verifies the signature offline.
func Example() {
	ctx := context.Background()
	listing := []byte("100644 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03 6 lib/data.txt\n")

	// Publisher.
	privPEM, pubPEM, err := trust.GenerateKey()
	if err != nil {
		log.Fatal(err)
	}
	sig, err := trust.Sign(ctx, listing, privPEM)
	if err != nil {
		log.Fatal(err)
	}

	// Operator.
	acme, err := trust.NewKeySigner("acme", pubPEM, nil)
	if err != nil {
		log.Fatal(err)
	}
	v, err := trust.NewVerifier([]trust.Signer{acme}, nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := v.Verify(ctx, listing, sig)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("signed by", res.Kind, res.Signer.Name)

	// Any change to the listing breaks the signature.
	tampered := append([]byte(nil), listing...)
	tampered[0] = '2'
	_, err = v.Verify(ctx, tampered, sig)
	fmt.Println("tampered listing untrusted:", errors.Is(err, trust.ErrUntrusted))

	// Output:
	// signed by key acme
	// tampered listing untrusted: true
}
