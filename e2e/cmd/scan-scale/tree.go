package main

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/e2e/corpus"
)

// current are rendered templates of objects on current versions, one
// object each: %[1]s is the chart, %[2]d the file's number.
var current = []string{
	`# Source: %[1]s/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s-%[2]d
  namespace: %[1]s
  labels:
    app.kubernetes.io/name: %[1]s
    app.kubernetes.io/instance: release-%[2]d
    app.kubernetes.io/managed-by: Helm
    helm.sh/chart: %[1]s-1.2.3
spec:
  replicas: 3
  revisionHistoryLimit: 10
  selector:
    matchLabels:
      app.kubernetes.io/name: %[1]s
      app.kubernetes.io/instance: release-%[2]d
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 25%%, maxUnavailable: 0}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: %[1]s
        app.kubernetes.io/instance: release-%[2]d
      annotations:
        checksum/config: 3f2a9c0d4b1e8f7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b
    spec:
      serviceAccountName: %[1]s
      securityContext: {runAsNonRoot: true, runAsUser: 1000, fsGroup: 2000}
      containers:
      - name: app
        image: "registry.example.com/%[1]s:1.2.3"
        imagePullPolicy: IfNotPresent
        args: ["--port=8080", "--log-level=info"]
        ports:
        - {name: http, containerPort: 8080, protocol: TCP}
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        livenessProbe:
          httpGet: {path: /healthz, port: http}
        readinessProbe:
          httpGet: {path: /ready, port: http}
        resources:
          limits: {cpu: 500m, memory: 512Mi}
          requests: {cpu: 100m, memory: 128Mi}
        volumeMounts:
        - {name: config, mountPath: /etc/app}
      volumes:
      - name: config
        configMap: {name: %[1]s-config}
`,
	`# Source: %[1]s/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: %[1]s-%[2]d
  labels: {app.kubernetes.io/name: %[1]s, app.kubernetes.io/managed-by: Helm}
spec:
  type: ClusterIP
  ports:
  - {port: 80, targetPort: http, protocol: TCP, name: http}
  selector: {app.kubernetes.io/name: %[1]s, app.kubernetes.io/instance: release-%[2]d}
`,
	`# Source: %[1]s/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: %[1]s-%[2]d-config
data:
  config.yaml: |
    server:
      port: 8080
      timeout: 30s
    log:
      level: info
      format: json
`,
	`# Source: %[1]s/templates/hpa.yaml
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: %[1]s-%[2]d
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %[1]s-%[2]d}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
`,
}

// oldManifest is a corpus manifest in block YAML and its version.
type oldManifest struct {
	gvk  schema.GroupVersionKind
	yaml []byte
}

// tree is what writeTree wrote: how many files of each old version.
type tree struct {
	files int
	old   map[schema.GroupVersionKind]int
}

// writeTree writes n manifests, one per file, nested as rendered Helm
// charts with subcharts (CHART/templates/PART/NAME.yaml and
// CHART/charts/SUB/templates/NAME.yaml, 100 files per chart). Every fifth
// file holds the next manifest of the corpus, in turn.
func writeTree(root string, n int, c *corpus.Corpus) (tree, error) {
	var olds []oldManifest
	for _, v := range c.Versions {
		for _, m := range v.Manifests {
			y, err := corpus.BlockYAML(m.JSON)
			if err != nil {
				return tree{}, fmt.Errorf("%s: %w", m.Source, err)
			}
			olds = append(olds, oldManifest{gvk: v.GroupVersionKind, yaml: y})
		}
	}
	if len(olds) == 0 {
		return tree{}, fmt.Errorf("the corpus has no manifests")
	}
	t := tree{files: n, old: map[schema.GroupVersionKind]int{}}
	for i := range n {
		chart := fmt.Sprintf("chart%03d", i/100)
		dir := filepath.Join(root, chart, "templates", fmt.Sprintf("part%d", i%4))
		if i%3 == 0 {
			dir = filepath.Join(root, chart, "charts", fmt.Sprintf("sub%d", i%5), "templates")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return tree{}, err
		}
		var body []byte
		if i%5 == 4 {
			m := olds[(i/5)%len(olds)]
			body = append(fmt.Appendf(nil, "# Source: %s/templates/%s.yaml\n", chart, m.gvk.Kind), m.yaml...)
			t.old[m.gvk]++
		} else {
			body = fmt.Appendf(nil, current[i%5], chart, i)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%06d.yaml", i)), body, 0o644); err != nil {
			return tree{}, err
		}
	}
	return t, nil
}
