//go:build !linux

package mcpexport

// The programs run as another user (otheruser_test.go) need setpriv,
// which is Linux's; TestMain names them on every system.
const (
	otherUserEnv     = "BERTH_TEST_OTHER_USER"
	otherUserSendEnv = "BERTH_TEST_OTHER_USER_SEND"
)

func otherUserMain() {}

func otherUserSend() {}
