package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/crowdfed/crowd/pasture/tlsca"
	"github.com/spf13/cobra"
)

func newCACmd() *cobra.Command {
	var state, out string
	cmd := &cobra.Command{
		Use:   "ca",
		Short: "The crowd's certificate authority: issue a certificate for the SUT's own name",
		Args:  subcommandArgs,
		RunE:  showHelp,
	}
	issue := &cobra.Command{
		Use:   "issue NAME...",
		Short: "Issue a certificate (chain and key) from the crowd's CA for each NAME, e.g. the SUT's host",
		Long: `Issue a TLS certificate signed by the crowd's CA (made in --state on first use) for each NAME,
written as NAME.crt (leaf then CA) and NAME.key (mode 0600: chown it to the SUT's user) in --out,
with the CA itself as ca.pem beside them for the SUT to trust the crowd. A SUT that serves the
certificate is trusted by the crowd and by every peer that trusts the crowd's CA.`,
		Args: minArgsUsage(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			for _, name := range names { // every name before anything is written
				if tlsca.CheckHost(name) != nil {
					return usage(fmt.Errorf("NAME %q: the CA issues for a DNS name or an IP address, one a certificate, no wildcard", name))
				}
			}
			dir := filepath.Join(state, "tls")
			_, statErr := os.Stat(filepath.Join(dir, tlsca.CACertFile))
			ca, err := tlsca.LoadOrCreate(dir)
			if err != nil {
				return err
			}
			if errors.Is(statErr, fs.ErrNotExist) {
				// Right before a first serve; from the wrong directory, a CA no
				// running crowd trusts: either way the user should know.
				warn(cmd, fmt.Sprintf("made a new CA in %s (there was none): a crowd trusts these certificates when it serves with --state %s", dir, state))
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return fmt.Errorf("--out %s: %w", out, err)
			}
			if err := os.WriteFile(filepath.Join(out, "ca.pem"), ca.CertPEM(), 0o644); err != nil {
				return fmt.Errorf("--out %s: %w", out, err)
			}
			for _, name := range names {
				certPath, keyPath, err := ca.IssueFiles(name, out)
				if err != nil {
					return usage(fmt.Errorf("NAME %q: %w", name, err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\t%s\n", name, certPath, keyPath)
			}
			return nil
		},
	}
	issue.Flags().StringVar(&state, "state", "crowd-state", "the crowd's state directory (its CA is in tls/)")
	issue.Flags().StringVar(&out, "out", ".", "directory for NAME.crt and NAME.key")
	cmd.AddCommand(issue)
	return cmd
}
