package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// xdsTLS reports whether a flag asks for TLS to the -xds server.
func (s settings) xdsTLS() bool {
	return s.xdsCA != "" || s.xdsCert != "" || s.xdsServerName != ""
}

// xdsCredentials returns the transport credentials of the connection to the -xds server:
// TLS 1.2 or later when xdsTLS, verifying the server's certificate against the -xds-ca
// file's CAs (or the system's) and the -xds-server-name (or the -xds host), presenting the
// -xds-cert certificate when given; plaintext otherwise, as a management server on the
// same host or pod serves.
func (s settings) xdsCredentials() (credentials.TransportCredentials, error) {
	if !s.xdsTLS() {
		return insecure.NewCredentials(), nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.xdsServerName}
	if s.xdsCA != "" {
		pem, err := os.ReadFile(s.xdsCA)
		if err != nil {
			return nil, fmt.Errorf("-xds-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, errors.New("-xds-ca: no PEM certificate in " + s.xdsCA)
		}
	}
	if s.xdsCert != "" {
		cert, err := tls.LoadX509KeyPair(s.xdsCert, s.xdsKey)
		if err != nil {
			return nil, fmt.Errorf("-xds-cert, -xds-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return credentials.NewTLS(cfg), nil
}
