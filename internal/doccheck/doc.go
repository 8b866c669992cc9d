// Package doccheck compiles the Go code blocks of the kit's markdown, README.md and
// docs/*.md, so that a block that stops compiling fails the tests (TestBlocksCompile).
//
// A block is a fenced ```go block. It is compiled in one of three ways, chosen by its text:
//
//   - a whole file, when it starts with a package clause: as it is;
//   - declarations (func, type, var, const) only: in a package of their own;
//   - anything else: as the body of a function returning error, so `return err` works.
//
// Imports are never written in a block that is not a whole file: each package name the
// block uses (ratelimit, local, redis, gin, http, time, ...) is imported from the table
// Imports. A block that uses a name it does not declare, such as a ctx or a router
// built elsewhere, says so on the line before its fence, in an HTML comment that the
// rendered markdown hides:
//
//	<!-- assume: ctx context.Context, r *gin.Engine -->
//
// The names become the function's parameters. Variables a block declares but does not use
// are used for it. CONTRIBUTING.md repeats this for writers of the docs.
package doccheck
