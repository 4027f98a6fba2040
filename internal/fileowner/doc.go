// Package fileowner tells who owns a file, where files have owners: the
// credential file (client) and the OAuth key file (switchboard) are
// refused when another user owns them, since that user could read or
// replace them.
package fileowner
