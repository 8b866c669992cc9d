package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// Limits on lengths announced by the server, so a garbled reply fails with an
// error instead of an enormous allocation. The bulk limit is Redis's own
// default proto-max-bulk-len.
const (
	maxBulkLen  = 512 << 20
	maxArrayLen = 1 << 20
)

// ReplyError is an error reply from Redis, such as "ERR unknown command" or
// "MOVED 3999 127.0.0.1:30001". The text is kept verbatim so tests can match
// its leading code with strings.HasPrefix.
type ReplyError string

// Error returns the reply text without the leading '-'.
func (e ReplyError) Error() string { return string(e) }

// conn is one RESP2 connection. It is not safe for concurrent use.
type conn struct {
	nc net.Conn
	r  *bufio.Reader
}

func dial(addr string, timeout time.Duration) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: bufio.NewReader(nc)}, nil
}

// do sends one command and reads its reply, giving up at deadline so a server
// that has died or hung cannot stall the test. Any error other than a
// ReplyError leaves the stream at an unknown position, and the connection
// must then be closed.
func (c *conn) do(deadline time.Time, args ...string) (any, error) {
	if err := c.nc.SetDeadline(deadline); err != nil {
		return nil, err
	}
	if _, err := c.nc.Write(encodeCommand(args)); err != nil {
		return nil, err
	}
	return readReply(c.r)
}

func (c *conn) close() error { return c.nc.Close() }

// encodeCommand renders args as a RESP array of bulk strings, the only form
// of request that carries arbitrary bytes safely.
func encodeCommand(args []string) []byte {
	n := 16
	for _, a := range args {
		n += len(a) + 16
	}
	b := make([]byte, 0, n)
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// readReply reads one reply. Simple strings and bulk strings become string,
// integers int64, arrays []any, and nil bulk strings and nil arrays nil. An
// error reply is returned as a ReplyError error; inside an array, where it is
// one result among several (as from EXEC), it stays a ReplyError value.
func readReply(r *bufio.Reader) (any, error) {
	v, err := readValue(r)
	if err != nil {
		return nil, err
	}
	if e, ok := v.(ReplyError); ok {
		return nil, e
	}
	return v, nil
}

func readValue(r *bufio.Reader) (any, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if line == "" {
		return nil, protocolError("empty reply line")
	}
	kind, rest := line[0], line[1:]
	switch kind {
	case '+':
		return rest, nil
	case '-':
		return ReplyError(rest), nil
	case ':':
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			return nil, protocolError("bad integer %q", rest)
		}
		return n, nil
	case '$':
		return readBulk(r, rest)
	case '*':
		return readArray(r, rest)
	default:
		return nil, protocolError("unexpected reply type %q", kind)
	}
}

func readBulk(r *bufio.Reader, header string) (any, error) {
	n, err := parseLength(header, maxBulkLen)
	if err != nil || n < 0 {
		return nil, err
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	if buf[n] != '\r' || buf[n+1] != '\n' {
		return nil, protocolError("bulk string of length %d not followed by CRLF", n)
	}
	return string(buf[:n]), nil
}

func readArray(r *bufio.Reader, header string) (any, error) {
	n, err := parseLength(header, maxArrayLen)
	if err != nil || n < 0 {
		return nil, err
	}
	// Grow as elements arrive rather than trusting the header for the
	// allocation.
	arr := make([]any, 0, min(n, 64))
	for range n {
		v, err := readValue(r)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
	}
	return arr, nil
}

// parseLength parses a bulk or array header, where -1 means nil.
func parseLength(s string, limit int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < -1 || n > limit {
		return 0, protocolError("bad length %q", s)
	}
	return n, nil
}

func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	body, ok := strings.CutSuffix(line, "\r\n")
	if !ok {
		return "", protocolError("line %q not terminated by CRLF", line)
	}
	return body, nil
}

func protocolError(format string, args ...any) error {
	return fmt.Errorf("redistest: RESP protocol error: "+format, args...)
}
