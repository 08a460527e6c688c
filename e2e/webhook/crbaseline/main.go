// Command crbaseline is the baseline of the conversion webhook benchmark:
// what a CRD author runs today, a controller-runtime conversion webhook for
// the Widget CRD of e2e/webhook/testdata, as kubebuilder scaffolds it (a
// manager, the v1 hub, v1alpha1 and v1beta1 spokes with hand-written
// ConvertTo/ConvertFrom, registered by WebhookManagedBy). It is a test
// fixture, built by the e2e test; mvpctl does not use it.
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	examplev1 "github.com/mvpctl/mvpctl/e2e/webhook/crbaseline/api/v1"
	examplev1alpha1 "github.com/mvpctl/mvpctl/e2e/webhook/crbaseline/api/v1alpha1"
	examplev1beta1 "github.com/mvpctl/mvpctl/e2e/webhook/crbaseline/api/v1beta1"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(examplev1alpha1.AddToScheme(scheme))
	utilruntime.Must(examplev1beta1.AddToScheme(scheme))
	utilruntime.Must(examplev1.AddToScheme(scheme))
}

func main() {
	var metricsAddr, probeAddr, host, certDir string
	var port int
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to; 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", "0", "The address the probe endpoint binds to; 0 disables it.")
	flag.StringVar(&host, "webhook-host", "", "The address the webhook server listens on.")
	flag.IntVar(&port, "webhook-port", 9443, "The port the webhook server listens on.")
	flag.StringVar(&certDir, "webhook-cert-dir", "", "The directory with the webhook's tls.crt and tls.key.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		WebhookServer:          webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: certDir}),
	})
	if err != nil {
		setupLog.Error(err, "unable to start manager")
		os.Exit(1)
	}

	if err := ctrl.NewWebhookManagedBy(mgr, &examplev1.Widget{}).Complete(); err != nil {
		setupLog.Error(err, "unable to create webhook", "webhook", "Widget")
		os.Exit(1)
	}
	// +kubebuilder:scaffold:builder

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", mgr.GetWebhookServer().StartedChecker()); err != nil {
		setupLog.Error(err, "unable to set up ready check")
		os.Exit(1)
	}

	setupLog.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
}
