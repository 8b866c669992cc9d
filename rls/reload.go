package rls

import (
	"bytes"
	"encoding/binary"
	"sync"
	"time"

	"github.com/sluice-go/ratelimit/internal/settle"
)

// DefaultPollInterval is how often a Watcher reads the configuration.
const DefaultPollInterval = time.Second

// Watcher reloads a Service's configuration from a file or directory when it changes: it
// reads it every poll interval, and a content takes effect only when two reads one interval
// apart give the same bytes, so that a file caught half-written (a YAML prefix is valid
// YAML) is never loaded. A content that does not load, or that the limiter refuses, changes
// nothing: the service keeps the configuration, and the buckets, it had; the error goes to
// the Watcher's error function, once per content. Buckets are named by their descriptor's
// keys and values, and their limits keep usage (see Rule.Limit), so a reload that keeps a
// limit resets no one.
type Watcher struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Watch starts a Watcher of path for s, polling every interval (DefaultPollInterval when
// zero or negative); onLoad, when not nil, is told of each configuration that took effect,
// onError of each content that did not load. It does not load the first content: give s
// the configuration at path first (Load). Close stops it.
func Watch(s *Service, path string, interval time.Duration, onLoad func(*Config), onError func(error)) *Watcher {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	w := &Watcher{stop: make(chan struct{}), done: make(chan struct{})}
	current, _ := digest(path)
	go w.loop(s, path, interval, current, onLoad, onError)
	return w
}

func (w *Watcher) loop(s *Service, path string, every time.Duration, current settle.Sum,
	onLoad func(*Config), onError func(error)) {
	defer close(w.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var state settle.State
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		sum, files := digest(path)
		if files == nil && sum == (settle.Sum{}) || !state.Next(sum, current) {
			continue // unreadable now, or not a content to load (yet)
		}
		c, err := Parse(files...)
		if err == nil {
			err = s.SetConfig(c)
		}
		if err != nil {
			state.Failed(sum)
			if onError != nil {
				onError(err)
			}
			continue
		}
		current = sum
		state.Loaded()
		if onLoad != nil {
			onLoad(c)
		}
	}
}

// digest reads the files at path and returns a digest of their names and contents; the
// zero digest and no files when they cannot be read.
func digest(path string) (settle.Sum, []File) {
	files, err := ReadFiles(path)
	if err != nil {
		return settle.Sum{}, nil
	}
	var b bytes.Buffer
	for _, f := range files {
		_ = binary.Write(&b, binary.BigEndian, uint64(len(f.Name)))
		b.WriteString(f.Name)
		_ = binary.Write(&b, binary.BigEndian, uint64(len(f.Data)))
		b.Write(f.Data)
	}
	if files == nil {
		files = []File{} // a directory without files is a content too
	}
	return settle.Of(b.Bytes()), files
}

// Close stops the Watcher and waits for its goroutine; a second Close does nothing.
func (w *Watcher) Close() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}
