package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// pki is a CA made for a test, and the files of what it signed.
type pki struct {
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	p := &pki{dir: t.TempDir(), cert: cert, key: key, pool: x509.NewCertPool()}
	p.pool.AddCert(cert)
	p.write(t, "ca.pem", "CERTIFICATE", der)
	return p
}

func (p *pki) write(t *testing.T, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
	return path
}

// issue signs a certificate for usage, valid for 127.0.0.1 and the name xds.test, writes
// it and its key as name.crt and name.key, and returns it.
func (p *pki) issue(t *testing.T, name string, serial int64, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"xds.test"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	p.write(t, name+".crt", "CERTIFICATE", der)
	p.write(t, name+".key", "PRIVATE KEY", keyDER)
	cert, err := tls.X509KeyPair(
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	require.NoError(t, err)
	return cert
}

func (p *pki) file(name string) string { return filepath.Join(p.dir, name) }

// TestXDSTLS: the management server speaks TLS and asks for the client's certificate
// (mutual TLS). The command with -xds-ca, -xds-cert and -xds-key loads the pushed
// snapshot and answers with it; with -xds-server-name, a name the certificate holds, too.
// Without its certificate, or trusting another CA, it logs that nothing was loaded, and
// why.
func TestXDSTLS(t *testing.T) {
	ca := newPKI(t)
	server := ca.issue(t, "server", 2, x509.ExtKeyUsageServerAuth)
	ca.issue(t, "client", 3, x509.ExtKeyUsageClientAuth)
	creds := credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{server}, ClientCAs: ca.pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	})
	mutual := []string{"-xds-ca", ca.file("ca.pem"), "-xds-cert", ca.file("client.crt"), "-xds-key", ca.file("client.key")}

	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"mutual", nil},
		{"server-name", []string{"-xds-server-name", "xds.test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, snapshots := serveXDS(t, grpc.Creds(creds))
			args := append([]string{"-xds", addr, "-xds-node", "edge-rls"}, mutual...)
			httpAddr, logs := runXDS(t, "xds configuration loaded", append(args, tc.extra...)...)
			pushEdge(t, snapshots)
			<-logs.seen
			requireOverLimit(t, httpAddr)
		})
	}

	other := newPKI(t)
	for _, tc := range []struct {
		name string
		args []string
		want string // in the logged error
	}{
		// The server refuses the handshake: what the client reads then depends on when the
		// alert comes (TLS 1.3 ends the client's side of it first), a broken pipe as well.
		{"no client certificate", []string{"-xds-ca", ca.file("ca.pem")}, "code = Unavailable"},
		{"another CA", []string{"-xds-ca", other.file("ca.pem"), "-xds-cert", ca.file("client.crt"), "-xds-key", ca.file("client.key")},
			"certificate signed by unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := serveXDS(t, grpc.Creds(creds))
			_, logs := runXDS(t, "xds configuration not loaded", append([]string{"-xds", addr}, tc.args...)...)
			<-logs.seen
			require.Contains(t, logs.text(), tc.want)
		})
	}
}

// TestXDSTLSFlags: the TLS flags are checked before anything starts.
func TestXDSTLSFlags(t *testing.T) {
	ca := newPKI(t)
	require.NoError(t, os.WriteFile(ca.file("empty.pem"), nil, 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-xds", "127.0.0.1:1", "-xds-cert", "c.crt"}, "-xds-cert and -xds-key go together"},
		{[]string{"-xds", "127.0.0.1:1", "-xds-key", "c.key"}, "-xds-cert and -xds-key go together"},
		{[]string{"-config", exampleConfig, "-xds-ca", ca.file("ca.pem")}, "need -xds"},
		{[]string{"-xds", "127.0.0.1:1", "-xds-ca", ca.file("missing.pem")}, "-xds-ca: open"},
		{[]string{"-xds", "127.0.0.1:1", "-xds-ca", ca.file("empty.pem")}, "-xds-ca: no PEM certificate"},
		{[]string{"-xds", "127.0.0.1:1", "-xds-cert", ca.file("ca.pem"), "-xds-key", ca.file("ca.pem")}, "-xds-cert, -xds-key:"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			err := run(t.Context(), append([]string{"-grpc-addr", "127.0.0.1:0", "-http-addr", "127.0.0.1:0"}, tc.args...),
				&lockedWriter{w: &strings.Builder{}}, nil)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
