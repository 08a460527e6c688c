package webhook

import (
	"context"
	"log/slog"

	"github.com/mvpctl/mvpctl/engine/rulesource"
)

// ManageOptions configure the wiring of CRDs to the webhook.
type ManageOptions struct {
	// URL points the CRDs at the webhook by URL; empty means by the Service.
	URL string
	// ServiceName and ServiceNamespace are the webhook's Service.
	ServiceName, ServiceNamespace string
}

func (m ManageOptions) run(ctx context.Context, rules *rulesource.Source, srv *Server, log *slog.Logger) error {
	<-ctx.Done()
	return nil
}
