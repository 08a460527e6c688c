// Package framework runs real mixed-version Kubernetes control planes for
// tests: one etcd and N kube-apiservers of chosen versions on 127.0.0.1,
// sharing that etcd, built from their Go modules by package bins.
//
// # Starting
//
//	func TestMain(m *testing.M) { framework.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		cp := framework.Start(t, framework.Options{Versions: []string{"v1.35.4", "v1.36.3"}})
//		old, cur := cp.Server(0), cp.Server(1)
//		client := kubernetes.NewForConfigOrDie(cur.RESTConfig())
//		...
//		if _, err := cp.Replace(ctx, 0, "v1.36.3"); err != nil { // roll server 0
//			t.Fatal(err)
//		}
//	}
//
// Start generates a PKI (a CA; a serving certificate for 127.0.0.1,
// localhost and kubernetes.default.svc; a front-proxy CA and client; a
// service-account key; an admin client certificate and a bearer token, both
// in system:masters), starts etcd, then starts the servers concurrently on
// free ports and waits for each one's /readyz. Each server gets a kubeconfig
// of its own. As root, each server runs in its own UTS namespace with
// hostname apiserver-<index>, because kube-apiserver derives its identity
// lease from the hostname: two servers on one hostname would claim one
// identity and upstream's peer proxy would see no peer.
//
// # What the servers are not
//
// There is no controller-manager, scheduler or kubelet. Namespaces are
// created without their default ServiceAccount (create one before creating
// pods, or the ServiceAccount admission plugin rejects them), deleted
// namespaces stay Terminating, and nothing runs pods.
//
// # Cleaning up
//
// Every child runs in its own process group and receives SIGKILL when the
// test binary dies. Start registers Stop with t.Cleanup; [Main] handles
// SIGINT and SIGTERM. When a test fails, the control plane's directory is
// kept and the end of every server's log is printed.
package framework
