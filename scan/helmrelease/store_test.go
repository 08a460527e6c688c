package helmrelease_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	metafake "k8s.io/client-go/metadata/fake"

	"github.com/mvpctl/mvpctl/scan/helmrelease"
)

// store holds releases in fake clients: Secrets, and their metadata for
// List.
func store(t *testing.T, secrets ...*corev1.Secret) (*helmrelease.Store, *fake.Clientset) {
	t.Helper()
	var objs, metas []runtime.Object
	for _, s := range secrets {
		objs = append(objs, s)
		metas = append(metas, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: s.ObjectMeta})
	}
	scheme := metafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cs := fake.NewSimpleClientset(objs...)
	now := time.Unix(1800000000, 0)
	return &helmrelease.Store{Core: cs, Meta: metafake.NewSimpleMetadataClient(scheme, metas...), Now: func() time.Time { return now }}, cs
}

func secret(name string, rev int, status string, data []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: helmrelease.Key(name, rev), Namespace: "default",
			Labels: map[string]string{"owner": "helm", "name": name, "status": status, "version": strconv.Itoa(rev), "createdAt": "1628065800", "team": "web"}},
		Type: helmrelease.SecretType, Data: map[string][]byte{"release": data},
	}
}

func TestStore_Write(t *testing.T) {
	ctx := context.Background()
	data := fixture(t, "sh.helm.release.v1.shop.v1")
	s, cs := store(t, secret("shop", 1, "deployed", data), secret("shop", 2, "failed", []byte("x")))
	rels, err := s.List(ctx, "default", "")
	if err != nil {
		t.Fatal(err)
	}
	want := helmrelease.Release{Namespace: "default", Name: "shop", Driver: helmrelease.Secrets, Deployed: 1, Last: 2, LastStatus: "failed"}
	if len(rels) != 1 || rels[0] != want {
		t.Fatalf("List = %+v, want %+v", rels, want)
	}
	st, err := s.Get(ctx, rels[0])
	if err != nil {
		t.Fatal(err)
	}
	c, err := helmrelease.Convert(ctx, st.Record, options(t, false))
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.Write(ctx, st, c.Apply(st.Record))
	if err != nil || rev != 3 {
		t.Fatalf("Write = %d, %v", rev, err)
	}

	old, err := cs.CoreV1().Secrets("default").Get(ctx, helmrelease.Key("shop", 1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := old.Labels; l["status"] != "superseded" || l["modifiedAt"] != "1800000000" || l["version"] != "1" || l["team"] != "web" {
		t.Errorf("revision 1 labels %v", l)
	}
	oldRec, err := helmrelease.Decode(old.Data["release"])
	if err != nil || oldRec.Status() != "superseded" || oldRec.Manifest() != st.Record.Manifest() || oldRec.Version() != 1 {
		t.Errorf("revision 1: %v", err)
	}

	next, err := cs.CoreV1().Secrets("default").Get(ctx, helmrelease.Key("shop", 3), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{"owner": "helm", "name": "shop", "status": "deployed", "version": "3", "createdAt": "1800000000", "team": "web"}
	if next.Type != helmrelease.SecretType || len(next.Labels) != len(wantLabels) {
		t.Errorf("revision 3: type %q labels %v", next.Type, next.Labels)
	}
	for k, v := range wantLabels {
		if next.Labels[k] != v {
			t.Errorf("revision 3 label %s=%q, want %q", k, next.Labels[k], v)
		}
	}
	nextRec, err := helmrelease.Decode(next.Data["release"])
	if err != nil {
		t.Fatal(err)
	}
	if nextRec.Version() != 3 || nextRec.Status() != "deployed" || nextRec.Description() != helmrelease.Description || nextRec.Manifest() != c.Manifest {
		t.Errorf("revision 3: v%d %s %q", nextRec.Version(), nextRec.Status(), nextRec.Description())
	}
}

func TestStore_Write_PutsBackOnFailure(t *testing.T) {
	ctx := context.Background()
	data := fixture(t, "sh.helm.release.v1.shop.v1")
	// Revision 2 exists but its labels are not Helm's: List does not see
	// it, Create collides with it.
	other := secret("shop", 2, "deployed", []byte("x"))
	other.Labels = nil
	s, cs := store(t, secret("shop", 1, "deployed", data), other)
	rels, err := s.List(ctx, "default", "shop")
	if err != nil || len(rels) != 1 {
		t.Fatalf("List = %+v, %v", rels, err)
	}
	st, err := s.Get(ctx, rels[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, st, st.Record); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("Write: %v", err)
	}
	old, err := cs.CoreV1().Secrets("default").Get(ctx, helmrelease.Key("shop", 1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if old.Labels["status"] != "deployed" || string(old.Data["release"]) != string(data) || old.Labels["modifiedAt"] != "" {
		t.Errorf("revision 1 not put back: %v", old.Labels)
	}
}

func TestStore_Write_Pending(t *testing.T) {
	ctx := context.Background()
	s, _ := store(t, secret("shop", 1, "deployed", fixture(t, "sh.helm.release.v1.shop.v1")), secret("shop", 2, "pending-upgrade", []byte("x")))
	rels, err := s.List(ctx, "", "")
	if err != nil || len(rels) != 1 {
		t.Fatalf("List = %+v, %v", rels, err)
	}
	st, err := s.Get(ctx, rels[0])
	if err != nil {
		t.Fatal(err)
	}
	var pending *helmrelease.PendingError
	if _, err := s.Write(ctx, st, st.Record); !errors.As(err, &pending) {
		t.Errorf("Write: %v, want a *PendingError", err)
	}
}
