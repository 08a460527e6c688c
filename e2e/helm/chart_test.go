package helm_test

import (
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
)

// oldTemplates render what a chart written for Kubernetes v1.21 applied:
// an extensions/v1beta1 Ingress and a batch/v1beta1 CronJob (both removed
// since), a current Service, and a test hook on a removed version.
var oldTemplates = map[string]string{
	"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
  labels: {app: {{ .Release.Name }}}
spec:
  selector: {app: {{ .Release.Name }}}
  ports:
  - port: 80
    targetPort: 8080
`,
	"templates/ingress.yaml": `apiVersion: extensions/v1beta1
kind: Ingress
metadata:
  name: {{ .Release.Name }}
  annotations:
    kubernetes.io/ingress.class: nginx
spec:
  rules:
  - host: {{ .Release.Name }}.example.com
    http:
      paths:
      - path: /
        backend:
          serviceName: {{ .Release.Name }}
          servicePort: 80
`,
	"templates/cronjob.yaml": `apiVersion: batch/v1beta1
kind: CronJob
metadata:
  name: {{ .Release.Name }}-report
spec:
  schedule: "0 3 * * *"
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: report
            image: busybox:1.36
            args: [sh, -c, "echo report"]
`,
	"templates/tests/smoke.yaml": `apiVersion: networking.k8s.io/v1beta1
kind: Ingress
metadata:
  name: {{ .Release.Name }}-smoke
  annotations:
    helm.sh/hook: test
spec:
  backend:
    serviceName: {{ .Release.Name }}
    servicePort: 80
`,
}

// newTemplates are the same chart rewritten for current versions: what
// the next helm upgrade applies.
var newTemplates = map[string]string{
	"templates/service.yaml": oldTemplates["templates/service.yaml"],
	"templates/ingress.yaml": `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {{ .Release.Name }}
spec:
  ingressClassName: nginx
  rules:
  - host: {{ .Release.Name }}.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: {{ .Release.Name }}
            port: {number: 80}
`,
	"templates/cronjob.yaml": `apiVersion: batch/v1
kind: CronJob
metadata:
  name: {{ .Release.Name }}-report
spec:
  schedule: "0 4 * * *"
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: report
            image: busybox:1.37
            args: [sh, -c, "echo report"]
`,
}

func newChart(version string, templates map[string]string) *chart.Chart {
	c := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "shop", Version: version, AppVersion: "1.0"},
		Values: map[string]any{"replicas": 1}}
	for _, name := range []string{"templates/service.yaml", "templates/ingress.yaml", "templates/cronjob.yaml", "templates/tests/smoke.yaml"} {
		if data, ok := templates[name]; ok {
			c.Templates = append(c.Templates, &chart.File{Name: name, Data: []byte(data)})
		}
	}
	return c
}

// renderInstalled renders the old chart as helm install did on a v1.21
// cluster (the SDK's client-only install) and returns the release as Helm
// stored it once deployed.
func renderInstalled(t *testing.T, name, namespace string, at time.Time) *release.Release {
	t.Helper()
	cfg := &action.Configuration{Log: t.Logf}
	inst := action.NewInstall(cfg)
	inst.ClientOnly, inst.DryRun = true, true
	inst.ReleaseName, inst.Namespace = name, namespace
	inst.KubeVersion = &chartutil.KubeVersion{Version: "v1.21.14", Major: "1", Minor: "21"}
	rel, err := inst.Run(newChart("0.1.0", oldTemplates), map[string]any{"replicas": 2})
	if err != nil {
		t.Fatalf("helm install (client only): %v", err)
	}
	rel.Info.Status = release.StatusDeployed
	rel.Info.Description = "Install complete"
	rel.Info.FirstDeployed = helmtime.Time{Time: at}
	rel.Info.LastDeployed = helmtime.Time{Time: at}
	return rel
}
