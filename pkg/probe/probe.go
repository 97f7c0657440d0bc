// Package probe is the `probe` subcommand of both binaries: an HTTPS GET
// of a health endpoint that exits 0 on 200 and 1 otherwise, for
// container healthchecks in images that have no shell and no curl.
package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Options are the probe's flags.
type Options struct {
	URL string
	// CAFile verifies the server; empty uses the system's roots.
	CAFile string
	// CertFile and KeyFile authenticate the probe, when set.
	CertFile, KeyFile string
	// InsecureSkipVerify accepts any serving certificate, for a server
	// whose certificate is self-signed at start (the controller-manager's).
	InsecureSkipVerify bool
	Timeout            time.Duration
}

// NewCommand returns the probe subcommand.
func NewCommand() *cobra.Command {
	o := Options{URL: "https://127.0.0.1:6443/readyz", Timeout: 5 * time.Second}
	cmd := &cobra.Command{
		Use:          "probe",
		Short:        "GET a health endpoint over HTTPS: exit 0 on 200, 1 otherwise (for container healthchecks)",
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.URL, "url", o.URL, "URL to GET")
	f.StringVar(&o.CAFile, "cacert", o.CAFile, "CA bundle (PEM) that verifies the server")
	f.StringVar(&o.CertFile, "cert", o.CertFile, "client certificate (PEM)")
	f.StringVar(&o.KeyFile, "key", o.KeyFile, "client certificate's key (PEM)")
	f.BoolVar(&o.InsecureSkipVerify, "insecure-skip-tls-verify", o.InsecureSkipVerify, "do not verify the server's certificate")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up after this long")
	return cmd
}

// Run GETs the URL and writes the answer's body to out; an error for
// anything but 200.
func (o Options) Run(ctx context.Context, out io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	tlsConfig := &tls.Config{InsecureSkipVerify: o.InsecureSkipVerify} //nolint:gosec // asked for by flag
	if o.CAFile != "" {
		data, err := os.ReadFile(o.CAFile)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return fmt.Errorf("%s: no certificate", o.CAFile)
		}
		tlsConfig.RootCAs = pool
	}
	if o.CertFile != "" || o.KeyFile != "" {
		pair, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return err
		}
		tlsConfig.Certificates = []tls.Certificate{pair}
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.URL, nil)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	fmt.Fprint(out, string(body))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d %s", o.URL, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}
