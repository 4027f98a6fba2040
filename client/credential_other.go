//go:build !unix

package client

import "io/fs"

// ownerOf reports that files have no Unix owner and mode here: on Windows
// the credential lives in the user's own profile, whose ACL keeps other
// users out.
func ownerOf(fs.FileInfo) (uid int, ok bool) { return 0, false }
