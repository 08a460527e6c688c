package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/engine/proxy"
)

type rulesUsageOptions struct {
	URL    string // the proxy's metrics address, or /debug/clients itself
	Output string // text, json or yaml
	// Filters; an empty value matches any (groupSet: --group was given, so
	// that "" selects the core group).
	Group, Version, Resource, User string
	groupSet                       bool
}

// maxRefusalBytes bounds the body of a refusal read for its message.
const maxRefusalBytes = 64 << 10

// clientsPath is where the proxy serves its usage table.
const clientsPath = "/debug/clients"

func newRulesUsageCmd(flags *genericclioptions.ConfigFlags) *cobra.Command {
	opts := rulesUsageOptions{URL: "http://127.0.0.1:9464", Output: "text"}
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Show who still calls old API versions through a running mvpctl proxy",
		Long: `Show which clients still call old API versions through a running mvpctl
proxy: the versions it emulates, and those that Kubernetes deprecates or
removes in the release of the server that answered. It reads the proxy's
/debug/clients on its --metrics-listen address: per group, version and
resource, each user and user agent with their requests (by verb, and how many
were emulated) and when they were first and last seen, the most recent first.

Users are those the proxy could vouch for: the user of a verified client
certificate, or the one a server names for a bearer token. Requests without
credentials, and those the server refused (401, 403; 404 but for a removed
version), are not listed; the proxy's metrics count them. The proxy remembers --usage-table-size clients, at most 100 per user:
a user at that quota replaces its own least recently seen entry, and a full
table one of the users holding the most; the command says how many were
dropped.

On loopback the proxy serves /debug/clients over HTTP to anyone, and no
credentials are sent. Elsewhere it serves it over HTTPS to users the cluster
authenticates and allows to get the path (ClusterRole
mvpctl-proxy-debug-reader): the credentials come from the kubeconfig flags,
and the proxy's serving certificate is verified with --certificate-authority
or the kubeconfig's CA (a kubeconfig written by mvpctl proxy
--write-kubeconfig has the right one).`,
		Example: `  # Who still calls policy/v1beta1, and when did they last?
  mvpctl rules usage --url http://127.0.0.1:9464 --group policy --version v1beta1

  # A proxy in the cluster, as a user bound to mvpctl-proxy-debug-reader
  kubectl -n mvpctl-system port-forward deploy/mvpctl-proxy 9464 &
  mvpctl rules usage --url https://localhost:9464 --certificate-authority proxy-ca.crt -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.groupSet = cmd.Flags().Changed("group")
			return runRulesUsage(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), flags, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.URL, "url", opts.URL, "the proxy's --metrics-listen address (http:// on loopback, https:// elsewhere), or its /debug/clients URL")
	f.StringVarP(&opts.Output, "output", "o", opts.Output, "output format: text, json or yaml")
	f.StringVar(&opts.Group, "group", "", `only this API group ("" for the core group)`)
	f.StringVar(&opts.Version, "version", "", "only this API version, e.g. v1beta1")
	f.StringVar(&opts.Resource, "resource", "", "only this resource, e.g. poddisruptionbudgets")
	f.StringVar(&opts.User, "user-name", "", "only this user")
	registerCompletion(cmd, "output", completeWords("text", "json", "yaml"))
	return cmd
}

func runRulesUsage(ctx context.Context, stdout, stderr io.Writer, flags *genericclioptions.ConfigFlags, opts rulesUsageOptions) error {
	switch opts.Output {
	case "text", "json", "yaml":
	default:
		return usageErrorf("--output %q: want text, json or yaml", opts.Output)
	}
	target, err := clientsURL(opts.URL)
	if err != nil {
		return err
	}
	client, err := clientsHTTPClient(flags, target)
	if err != nil {
		return err
	}
	report, err := fetchClients(ctx, client, target)
	if err != nil {
		return err
	}
	report.Clients = slices.DeleteFunc(report.Clients, func(e proxy.ClientUsage) bool { return !opts.matches(e) })
	switch opts.Output {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	case "yaml":
		data, err := yaml.Marshal(report)
		if err != nil {
			return failure(err)
		}
		_, err = stdout.Write(data)
		return err
	}
	return writeClientsTable(stdout, stderr, report)
}

func (o rulesUsageOptions) matches(e proxy.ClientUsage) bool {
	return (!o.groupSet || e.Group == o.Group) && (o.Version == "" || e.Version == o.Version) &&
		(o.Resource == "" || e.Resource == o.Resource) && (o.User == "" || e.User == o.User)
}

// clientsURL is the /debug/clients URL of --url: a base address, or that
// URL itself. Plain HTTP is for loopback only, where the proxy serves it.
func clientsURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, usageErrorf("--url %q: want http://127.0.0.1:PORT (loopback) or https://HOST:PORT, the proxy's --metrics-listen address", raw)
	}
	if u.Scheme == "http" {
		if loopback, _ := proxy.LoopbackAddress(net.JoinHostPort(u.Hostname(), "0")); !loopback {
			return nil, usageErrorf("--url %q: off loopback the proxy serves /debug/clients over HTTPS only; use https://", raw)
		}
	}
	if !strings.HasSuffix(u.Path, clientsPath) {
		u.Path = strings.TrimSuffix(u.Path, "/") + clientsPath
	}
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u, nil
}

// clientsHTTPClient is a plain client on loopback (the endpoint is open
// there: no credentials leave over HTTP), and over HTTPS one with the
// kubeconfig's credentials and CA, pointed at the proxy.
func clientsHTTPClient(flags *genericclioptions.ConfigFlags, target *url.URL) (*http.Client, error) {
	if target.Scheme == "http" {
		return &http.Client{Timeout: 30 * time.Second}, nil
	}
	if flags.APIServer != nil && *flags.APIServer != "" {
		return nil, usageErrorf("--server names a Kubernetes API server; give the proxy's address with --url")
	}
	// Without a kubeconfig the flags alone (--token, --certificate-authority,
	// ...) make the configuration: the proxy stands in for the server.
	server := target.Scheme + "://" + target.Host
	flags.APIServer = &server
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, inputError(fmt.Errorf("kubeconfig: %w", err))
	}
	cfg.Host = server
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	cfg.UserAgent = "mvpctl"
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, inputError(err)
	}
	return c, nil
}

// fetchClients GETs the report. A refused or failed connection is an input
// error (exit 2), the proxy's refusal (401, 403, a proxy without the
// endpoint) a failure (exit 1), each in one line.
func fetchClients(ctx context.Context, c *http.Client, target *url.URL) (proxy.ClientsReport, error) {
	var report proxy.ClientsReport
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return report, inputError(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if utilnet.IsConnectionRefused(err) {
			return report, usageErrorf("the connection to %s was refused; is --url the proxy's --metrics-listen address?", target.Host)
		}
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return report, usageErrorf("unable to connect to the proxy at %s: %v", target.Host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBytes))
		if err != nil {
			return report, failure(fmt.Errorf("reading %s: %w", target, err))
		}
		return report, failure(fmt.Errorf("%s: %s", target, statusMessage(resp.StatusCode, body)))
	}
	// Decoded as it arrives, up to what the largest table's report can
	// take: a full table is read whole, one entry at a time.
	limited := &io.LimitedReader{R: resp.Body, N: proxy.MaxClientsReportBytes + 1}
	if err := decodeClients(limited, &report); err != nil {
		if limited.N <= 0 {
			return report, failure(fmt.Errorf("%s: the answer is larger than %d bytes, more than a full table of the largest --usage-table-size", target, proxy.MaxClientsReportBytes))
		}
		return report, failure(fmt.Errorf("%s: not a /debug/clients answer: %v", target, err))
	}
	return report, nil
}

// decodeClients decodes a /debug/clients answer entry by entry (a
// json.Decoder reads a whole value before decoding it: the report's bytes
// and its entries would be held at once).
func decodeClients(r io.Reader, report *proxy.ClientsReport) error {
	dec := json.NewDecoder(r)
	delim := func(want json.Delim) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if tok != want {
			return fmt.Errorf("want %v, got %v", want, tok)
		}
		return nil
	}
	if err := delim('{'); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var field any
		switch tok {
		case "capacity":
			field = &report.Capacity
		case "perUser":
			field = &report.PerUser
		case "evicted":
			field = &report.Evicted
		case "clients":
			if err := delim('['); err != nil {
				return err
			}
			report.Clients = []proxy.ClientUsage{}
			for dec.More() {
				var e proxy.ClientUsage
				if err := dec.Decode(&e); err != nil {
					return err
				}
				report.Clients = append(report.Clients, e)
			}
			if err := delim(']'); err != nil {
				return err
			}
			continue
		default:
			field = new(json.RawMessage) // a field of a newer proxy
		}
		if err := dec.Decode(field); err != nil {
			return err
		}
	}
	return delim('}')
}

// statusMessage says what a refusal means, with the metav1.Status message
// the proxy sends (a mvpctl proxy older than /debug/clients answers 404).
func statusMessage(code int, body []byte) string {
	msg := http.StatusText(code)
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != "" {
		msg = st.Message
	}
	switch code {
	case http.StatusUnauthorized:
		msg += " (the proxy needs a bearer token or client certificate the cluster accepts)"
	case http.StatusForbidden:
		msg += " (bind the user to the ClusterRole mvpctl-proxy-debug-reader)"
	case http.StatusNotFound:
		msg += " (a proxy without /debug/clients: upgrade it)"
	}
	return fmt.Sprintf("HTTP %d: %s", code, printable(msg))
}

func writeClientsTable(stdout, stderr io.Writer, r proxy.ClientsReport) error {
	if r.Capacity == 0 {
		fmt.Fprintln(stderr, "The proxy keeps no table of clients (--usage-table-size 0); mvpctl_proxy_old_version_requests_total still counts their requests.")
		return nil
	}
	if len(r.Clients) == 0 {
		fmt.Fprintln(stderr, "No clients of old API versions seen.")
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "API VERSION\tRESOURCE\tUSER\tUSER AGENT\tREQUESTS\tEMULATED\tVERBS\tFIRST SEEN\tLAST SEEN")
		for _, e := range r.Clients {
			gv := e.Version
			if e.Group != "" {
				gv = e.Group + "/" + e.Version
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", printable(gv), printable(e.Resource), printable(e.User), printable(orDash(e.UserAgent)),
				e.Count, e.Emulated, verbCounts(e.Verbs), age(metav1.NewTime(e.FirstSeen)), age(metav1.NewTime(e.LastSeen)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if r.Evicted > 0 {
		fmt.Fprintf(stderr, "%d less recently seen entries were dropped: the proxy keeps %d (--usage-table-size), %d per user.\n", r.Evicted, r.Capacity, r.PerUser)
	}
	return nil
}

// verbCounts is get=1,list=2, in name order.
func verbCounts(m map[string]uint64) string {
	var parts []string
	for _, v := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, printable(v)+"="+strconv.FormatUint(m[v], 10))
	}
	return orDash(strings.Join(parts, ","))
}

// printable quotes what the proxy sent when it holds characters that do not
// print (a terminal would act on control characters, a tab break the
// table).
func printable(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return s
	}
	return strconv.QuoteToGraphic(s)
}
