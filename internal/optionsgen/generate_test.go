package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGenerated regenerates each middleware's options in memory and compares them, byte for
// byte, with the file on disk.
func TestGenerated(t *testing.T) {
	for _, pkg := range []string{"ginmw", "httpmw", "grpcmw"} {
		t.Run(pkg, func(t *testing.T) {
			want, err := Generate(pkg)
			require.NoError(t, err)
			path := filepath.Join("..", "..", pkg, fileName)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			if string(got) != string(want) {
				t.Fatalf("%s is stale: run go generate ./... from the module's root", path)
			}
		})
	}
}

// TestComment pins the wrapping of doc comments: a line of width columns is kept, one more
// column wraps, a phrase kept whole (keep) is not broken, a paragraph is reflowed, and
// paragraphs are separated by an empty comment line.
func TestComment(t *testing.T) {
	words := strings.TrimSpace(strings.Repeat("abcdefghij ", 8)) // 87 bytes: "// " + 87 = 90
	assert.Equal(t, "// "+words+" a", comment(words+" a"), "92 columns fit")
	assert.Equal(t, "// "+words+"\n// ab", comment(words+" ab"), "93 columns wrap")
	assert.Equal(t, "// One line.\n//\n// Second.", comment("  One\nline.\n\nSecond.\n"))
	// A phrase kept whole moves to the next line whole: 90 + " (a == b)" is 99 columns.
	assert.Equal(t, "// "+words+"\n// (a == b)", comment(words+" ("+keep("a == b")+")"))
}
