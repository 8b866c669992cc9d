package redistest

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// portsFrom hands out the given ports first and free ones after them, to
// steer start into a port that is already taken.
func portsFrom(taken ...int) func() (int, error) {
	return func() (int, error) {
		if len(taken) > 0 {
			p := taken[0]
			taken = taken[1:]
			return p, nil
		}
		return freePort()
	}
}

func TestStartRetriesWhenPortIsTaken(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	taken := l.Addr().(*net.TCPAddr).Port

	s := start(t, portsFrom(taken), role{})
	require.NotEqual(t, taken, s.Port())
	reply, err := s.Do("PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", reply)
}

// TestStartRetriesWhenAnotherRedisHoldsThePort covers the case where the
// process on the port answers PING too, so only its process id tells it
// apart from ours.
func TestStartRetriesWhenAnotherRedisHoldsThePort(t *testing.T) {
	t.Parallel()
	other := NewServer(t)
	_, err := other.Do("SET", "owner", "other")
	require.NoError(t, err)

	s := start(t, portsFrom(other.Port()), role{})
	require.NotEqual(t, other.Port(), s.Port())
	reply, err := s.Do("GET", "owner")
	require.NoError(t, err)
	require.Nil(t, reply)
}

func TestStartRetriesWhenClusterBusPortIsTaken(t *testing.T) {
	t.Parallel()
	port, err := freeClusterPort()
	require.NoError(t, err)
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port+busPortOffset)))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })

	pick := func() func() (int, error) {
		first := true
		return func() (int, error) {
			if first {
				first = false
				return port, nil
			}
			return freeClusterPort()
		}
	}()
	s := start(t, pick, clusterConfig{nodeTimeout: defaultNodeTimeout}.role())
	require.NotEqual(t, port, s.Port())
	reply, err := s.Do("CLUSTER", "MYID")
	require.NoError(t, err)
	require.NotEmpty(t, reply)
}

func TestInfoField(t *testing.T) {
	info := "# Server\r\nredis_version:7.0.15\r\nprocess_id:4242\r\n\r\n# Clients\r\nconnected_clients:1\r\n"
	require.Equal(t, "4242", infoField(info, "process_id"))
	require.Equal(t, "1", infoField(info, "connected_clients"))
	require.Empty(t, infoField(info, "process"))
	require.Empty(t, infoField(info, "missing"))
}
