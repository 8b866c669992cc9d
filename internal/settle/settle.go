// Package settle says when a content read from disk, again and again, may be taken as
// final. A file written in place is read while it is written, and a prefix of a rules file
// may be a valid file that lacks what follows (a YAML prefix is valid YAML): a content is
// taken only once two reads one poll apart give the same bytes, and a content that failed
// is not tried, nor reported, again until another is read. A file replaced by a rename is
// never seen half-written; it costs one poll more.
package settle

import "crypto/sha256"

// Sum identifies a content: the SHA-256 of its bytes.
type Sum [32]byte

// Of returns the Sum of data.
func Of(data []byte) Sum { return sha256.Sum256(data) }

// State is what a watcher keeps between its reads of one content. The zero value is ready;
// it is not safe for concurrent use (one watcher's loop owns it).
type State struct {
	pending, failed Sum
	hasPending      bool
	hasFailed       bool
}

// Next says whether sum, the content read now, is to be loaded: it differs from current
// (the content in force), it is not the last that failed, and the read before this one
// gave it too. A content that changed since the last read waits for the next.
func (s *State) Next(sum, current Sum) bool {
	if sum == current || s.hasFailed && sum == s.failed {
		s.hasPending = false
		return false
	}
	if !s.hasPending || sum != s.pending {
		s.pending, s.hasPending = sum, true
		return false
	}
	s.hasPending = false
	return true
}

// Failed records that sum, which Next gave, did not load: it is not given again while it
// stays the content read.
func (s *State) Failed(sum Sum) { s.failed, s.hasFailed = sum, true }

// Loaded records that sum, which Next gave, is in force: a content that failed before it
// is tried again when it is read again.
func (s *State) Loaded() { s.hasFailed = false }
