// Command optionsgen writes the options the middlewares share (ginmw, httpmw, grpcmw) into
// each middleware's options_gen.go, from the one table of options.go, so that each
// sentence of their documentation is written once. Each middleware runs it with go
// generate, in its own directory:
//
//	//go:generate go run ../internal/optionsgen ginmw
//
// and TestGenerated fails when a generated file is not what optionsgen writes: run
// go generate ./... after changing the table.
package main

import (
	"fmt"
	"os"
)

// fileName is the generated file, in the middleware's directory.
const fileName = "options_gen.go"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: optionsgen ginmw|httpmw|grpcmw (in that package's directory)")
		os.Exit(2)
	}
	src, err := Generate(os.Args[1])
	if err == nil {
		err = os.WriteFile(fileName, src, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "optionsgen:", err)
		os.Exit(1)
	}
}
