package cli

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// The test binary as another user's program (testkit.AsNobody); TestMain
// dispatches on these variables.

// otherUserGetEnv makes the test binary GET the URL in its arguments
// and print the status or the error: another user's browser.
const otherUserGetEnv = "BERTH_TEST_OTHER_USER_GET"

func otherUserGet() {
	res, err := (&http.Client{Timeout: 10 * time.Second}).Get(os.Args[1])
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	res.Body.Close()
	fmt.Println("status:", res.StatusCode)
}

// otherUserListenEnv makes the test binary listen on 127.0.0.1:0, print
// the port and hold it until stdin closes: another user's program that
// took the port of berth serve.
const otherUserListenEnv = "BERTH_TEST_OTHER_USER_LISTEN"

func otherUserListen() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	io.Copy(io.Discard, os.Stdin)
}
