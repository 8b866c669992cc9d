package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestComment pins the wrapping of doc comments: a line of width columns is kept, one more
// column wraps, a paragraph is reflowed, and paragraphs are separated by an empty comment
// line.
func TestComment(t *testing.T) {
	words := strings.TrimSpace(strings.Repeat("abcdefghij ", 8)) // 87 bytes: "// " + 87 = 90
	assert.Equal(t, "// "+words+" a", comment(words+" a"), "92 columns fit")
	assert.Equal(t, "// "+words+"\n// ab", comment(words+" ab"), "93 columns wrap")
	assert.Equal(t, "// One line.\n//\n// Second.", comment("  One\nline.\n\nSecond.\n"))
}
