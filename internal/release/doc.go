// Package release holds the test that the kit's modules resolve as a user's go get will
// resolve them once they are tagged: from a module proxy, each at the release version,
// with the replace directives of the work tree ignored as they are in a dependency.
package release
