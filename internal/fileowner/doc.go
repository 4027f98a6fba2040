// Package fileowner reads files that must be private to the user who
// reads them: the credential file (client) and the OAuth key file
// (switchboard). A file its group or others may read or write, or that
// another user owns, is refused, since someone else could know or replace
// what it holds.
//
// The checks are of the file opened, never of its name: ReadPrivate opens
// the path once, checks that descriptor with fstat, and reads the same
// descriptor, so the file cannot be swapped (for another file, or a
// symlink) between the check and the read.
package fileowner
