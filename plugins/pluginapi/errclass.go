package pluginapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"syscall"
)

// ClassTransport is ErrorClass's class for a transport error of no kind it
// names.
const ClassTransport = "transport error"

// ErrorClass returns a short class for a transport error, for
// StartResult.Error and the messages of LookupError and CompletionError:
// "ECONNREFUSED", "ECONNRESET", "EHOSTUNREACH", "ENETUNREACH", "EPIPE",
// "DNS", "ETIMEDOUT" (a network timeout, such as a connect that never
// completed), "TLS", "EOF" (the peer closed the connection), "canceled",
// or "transport error" for anything else. The class never carries a URL,
// a host name or a secret, which is why plugins use it instead of
// err.Error().
func ErrorClass(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	var unknownAuthority x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	var netErr net.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &dnsErr):
		return "DNS"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "ECONNREFUSED"
	case errors.Is(err, syscall.ECONNRESET):
		return "ECONNRESET"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "EHOSTUNREACH"
	case errors.Is(err, syscall.ENETUNREACH):
		return "ENETUNREACH"
	case errors.Is(err, syscall.EPIPE):
		return "EPIPE"
	case errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, context.DeadlineExceeded):
		return "ETIMEDOUT"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &certErr), errors.As(err, &recordErr),
		errors.As(err, &unknownAuthority), errors.As(err, &hostnameErr):
		return "TLS"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "EOF"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "ETIMEDOUT"
	}
	return ClassTransport
}
