package cli

import "github.com/spf13/cobra"

func newWebhookCheckCmd() *cobra.Command {
	return &cobra.Command{Use: "check", Short: "Prove that rules convert a CRD's objects between all its served versions", Hidden: true}
}
