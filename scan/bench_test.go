//go:build unix

package scan

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// benchManifests are realistic rendered templates, one object each; every
// fifth is on a removed version.
var benchManifests = []string{
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
        - {name: CONFIG, value: /etc/app/config.yaml}
        livenessProbe:
          httpGet: {path: /healthz, port: http}
          initialDelaySeconds: 10
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
	`# Source: %[1]s/templates/ingress.yaml
apiVersion: extensions/v1beta1
kind: Ingress
metadata:
  name: %[1]s-%[2]d
  annotations:
    kubernetes.io/ingress.class: nginx
    nginx.ingress.kubernetes.io/proxy-body-size: 8m
spec:
  tls:
  - hosts: [%[1]s.example.com]
    secretName: %[1]s-tls
  rules:
  - host: %[1]s.example.com
    http:
      paths:
      - path: /
        backend: {serviceName: %[1]s-%[2]d, servicePort: 80}
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

// writeBenchTree writes n manifests, one per file, nested as rendered Helm
// charts with subcharts: CHART/templates/PART/NAME.yaml and
// CHART/charts/SUB/templates/NAME.yaml.
func writeBenchTree(tb testing.TB, root string, n int) {
	tb.Helper()
	for i := range n {
		chart := fmt.Sprintf("chart%03d", i/100)
		dir := filepath.Join(root, chart, "templates", fmt.Sprintf("part%d", i%4))
		if i%3 == 0 {
			dir = filepath.Join(root, chart, "charts", fmt.Sprintf("sub%d", i%5), "templates")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		body := fmt.Sprintf(benchManifests[i%len(benchManifests)], chart, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%05d.yaml", i)), []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkRun_NestedTree scans 10,000 manifests (2,000 of them on a
// removed version) in a nested tree, as `mvpctl scan -R -f DIR` does, next
// to two references on the same tree in the same run: read (walk the tree
// and read every file with as many workers, the floor) and decode-all
// (decode every document, without the mayFlag test). Each reports the CPU
// time per scan and the process's peak RSS so far next to the wall time
// (ns/op). With MVPCTL_SCAN_BENCH_DIR the tree is written there and kept,
// to time the mvpctl binary on it.
func BenchmarkRun_NestedTree(b *testing.B) {
	const n = 10000
	root := os.Getenv("MVPCTL_SCAN_BENCH_DIR")
	if root == "" {
		root = b.TempDir()
	}
	writeBenchTree(b, root, n)
	scan := func(b *testing.B) {
		res := Run(context.Background(), []string{root}, Options{Recursive: true})
		if res.Documents != n || res.Count(Removed) != n/5 || len(res.Errors) > 0 {
			b.Fatalf("%d documents, %d removed, errors %v", res.Documents, res.Count(Removed), res.Errors)
		}
	}
	b.Run("read", func(b *testing.B) { measure(b, n, func(b *testing.B) { readTree(b, root, n) }) })
	b.Run("scan", func(b *testing.B) { measure(b, n, scan) })
	b.Run("decode-all", func(b *testing.B) {
		decodeAll = true
		defer func() { decodeAll = false }()
		measure(b, n, scan)
	})
}

// measure runs op b.N times and reports CPU time, peak RSS and throughput.
func measure(b *testing.B, n int, op func(*testing.B)) {
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		b.Fatal(err)
	}
	runs := 0
	for b.Loop() {
		op(b)
		runs++
	}
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		b.Fatal(err)
	}
	cpu := func(r syscall.Rusage) float64 { return float64(r.Utime.Nano()+r.Stime.Nano()) / 1e6 }
	b.ReportMetric((cpu(after)-cpu(before))/float64(runs), "cpu-ms/op")
	b.ReportMetric(float64(after.Maxrss)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(n)*float64(runs)/b.Elapsed().Seconds(), "manifests/s")
}

// readTree walks the tree and reads every file with one worker per CPU, as
// Run does, and nothing else.
func readTree(b *testing.B, root string, n int) {
	jobs := make(chan string, runtime.GOMAXPROCS(0))
	var read atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			buf := make([]byte, 64<<10)
			for p := range jobs {
				f, err := os.Open(p)
				if err != nil {
					b.Error(err)
					continue
				}
				if _, err := io.CopyBuffer(io.Discard, f, buf); err != nil {
					b.Error(err)
				}
				f.Close()
				read.Add(1)
			}
		})
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			jobs <- p
		}
		return err
	})
	close(jobs)
	wg.Wait()
	if err != nil || read.Load() != int64(n) {
		b.Fatalf("read %d files: %v", read.Load(), err)
	}
}
