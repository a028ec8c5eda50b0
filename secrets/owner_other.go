//go:build !unix

package secrets

import "io/fs"

// privateModes reports that file modes can say who may read a file: not
// on Windows, where the user's profile directory's ACL protects the store.
const privateModes = false

// ownerOf cannot tell a file's owner on this platform.
func ownerOf(fs.FileInfo) (mine, known bool) { return false, false }
