package redistest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEncodeCommand(t *testing.T) {
	got := encodeCommand([]string{"SET", "k", "", "a\r\nb"})
	require.Equal(t, "*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n$4\r\na\r\nb\r\n", string(got))
}

func TestReadReply(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"simple string", "+OK\r\n", "OK"},
		{"integer", ":-42\r\n", int64(-42)},
		{"bulk string", "$3\r\nfoo\r\n", "foo"},
		{"binary-safe bulk string", "$4\r\na\r\nb\r\n", "a\r\nb"},
		{"empty bulk string", "$0\r\n\r\n", ""},
		{"nil bulk string", "$-1\r\n", nil},
		{"nil array", "*-1\r\n", nil},
		{"empty array", "*0\r\n", []any{}},
		{"nested array", "*3\r\n:1\r\n*2\r\n+a\r\n$-1\r\n$1\r\nz\r\n", []any{int64(1), []any{"a", nil}, "z"}},
		{"error inside array", "*2\r\n+OK\r\n-ERR bad\r\n", []any{"OK", ReplyError("ERR bad")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bufio.NewReader(strings.NewReader(tt.in))
			got, err := readReply(r)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			_, err = r.ReadByte()
			require.ErrorIs(t, err, io.EOF, "reply not consumed exactly")
		})
	}
}

func TestReadReplyErrorReply(t *testing.T) {
	_, err := readReply(bufio.NewReader(strings.NewReader("-MOVED 3999 127.0.0.1:30001\r\n")))
	var replyErr ReplyError
	require.ErrorAs(t, err, &replyErr)
	require.Equal(t, ReplyError("MOVED 3999 127.0.0.1:30001"), replyErr)
}

func TestReadReplyMalformed(t *testing.T) {
	for name, in := range map[string]string{
		"unknown type":         "%1\r\n",
		"empty line":           "\r\n",
		"bare LF":              "+OK\n",
		"bad integer":          ":12x\r\n",
		"negative length":      "$-2\r\n",
		"oversized length":     "$999999999999\r\n",
		"bulk without CRLF":    "$3\r\nfooXY",
		"truncated bulk":       "$5\r\nfoo",
		"truncated array":      "*2\r\n+a\r\n",
		"bad length in array":  "*1\r\n$x\r\n",
		"connection cut short": "+OK",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := readReply(bufio.NewReader(strings.NewReader(in)))
			require.Error(t, err)
			var replyErr ReplyError
			require.False(t, errors.As(err, &replyErr), "protocol failure reported as a Redis error reply")
		})
	}
}

// TestConnDeadline checks that a server which accepts but never answers
// costs a bounded wait, not a hung test.
func TestConnDeadline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()

	c, err := dial(l.Addr().String(), time.Second)
	require.NoError(t, err)
	defer c.close()
	if peer := <-accepted; peer != nil {
		defer peer.Close()
	}

	_, err = c.do(time.Now().Add(50*time.Millisecond), "PING")
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
}
