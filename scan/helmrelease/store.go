package helmrelease

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
)

// What Helm's Secrets and ConfigMaps drivers write (pkg/storage/driver).
const (
	// SecretType is the type of the Secrets that hold Helm 3 and Helm 4
	// releases.
	SecretType = "helm.sh/release.v1"
	// keyPrefix starts the name of every storage object:
	// sh.helm.release.v1.NAME.vREVISION.
	keyPrefix = "sh.helm.release.v1."
	owner     = "helm"
)

// Storage drivers.
const (
	Secrets    = "Secret"
	ConfigMaps = "ConfigMap"
)

// systemLabels are the labels Helm sets itself; the others of a storage
// object are the release's own labels (helm install --labels).
var systemLabels = []string{"name", "owner", "status", "version", "createdAt", "modifiedAt"}

const (
	listPage = 500
	maxPages = 20000
)

var (
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// Release is a Helm release as its storage objects' labels describe it.
type Release struct {
	Namespace, Name string
	// Driver is Secret or ConfigMap.
	Driver string
	// Deployed is the deployed revision; zero when there is none.
	Deployed int
	// Last is the highest revision and LastStatus its status: helm upgrade
	// numbers the next revision Last+1, and refuses to run while it is
	// pending.
	Last       int
	LastStatus string
}

func (r Release) String() string { return r.Namespace + "/" + r.Name }

// Key is the name of the storage object of a revision.
func Key(name string, revision int) string { return keyPrefix + name + ".v" + strconv.Itoa(revision) }

// Store reads and writes the release records of a cluster.
type Store struct {
	Core kubernetes.Interface
	// Meta lists storage objects without their (up to 1 MiB) data.
	Meta metadata.Interface
	// Now is the clock for the labels and times Helm records; nil is
	// time.Now.
	Now func() time.Time
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// List finds the releases of a namespace ("" for all) in both drivers,
// or the one named name (any name when empty), from their labels.
func (s *Store) List(ctx context.Context, namespace, name string) ([]Release, error) {
	sel := "owner=" + owner
	if name != "" {
		sel += ",name=" + name
	}
	found := map[string]*Release{}
	for _, d := range []struct {
		driver string
		gvr    schema.GroupVersionResource
		field  string
	}{{Secrets, secretsGVR, "type=" + SecretType}, {ConfigMaps, configMapsGVR, ""}} {
		opts := metav1.ListOptions{LabelSelector: sel, FieldSelector: d.field, Limit: listPage}
		for page := 0; ; page++ {
			if page == maxPages {
				return nil, fmt.Errorf("listing %s: more than %d pages", d.gvr.Resource, maxPages)
			}
			l, err := s.Meta.Resource(d.gvr).Namespace(namespace).List(ctx, opts)
			if err != nil {
				return nil, fmt.Errorf("listing Helm releases in %s: %w", d.gvr.Resource, err)
			}
			for _, it := range l.Items {
				v, err := strconv.Atoi(it.Labels["version"])
				n := it.Labels["name"]
				if err != nil || n == "" || it.Name != Key(n, v) {
					continue // not written by Helm's drivers
				}
				key := d.driver + "\x00" + it.Namespace + "/" + n
				r := found[key]
				if r == nil {
					r = &Release{Namespace: it.Namespace, Name: n, Driver: d.driver}
					found[key] = r
				}
				if it.Labels["status"] == "deployed" && v > r.Deployed {
					r.Deployed = v
				}
				if v > r.Last {
					r.Last, r.LastStatus = v, it.Labels["status"]
				}
			}
			if l.Continue == "" {
				break
			}
			opts.Continue = l.Continue
		}
	}
	out := make([]Release, 0, len(found))
	for _, k := range slices.Sorted(maps.Keys(found)) {
		out = append(out, *found[k])
	}
	slices.SortStableFunc(out, func(a, b Release) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

// Stored is the deployed revision of a release, read from its storage
// object.
type Stored struct {
	Release
	Record *Record
	// Object is the Secret or ConfigMap as read: the backup, and what an
	// update is made from.
	Object runtime.Object
}

// Get reads the deployed revision of a release.
func (s *Store) Get(ctx context.Context, r Release) (*Stored, error) {
	if r.Deployed == 0 {
		return nil, fmt.Errorf("%s: no deployed revision", r)
	}
	key := Key(r.Name, r.Deployed)
	var data []byte
	var obj runtime.Object
	switch r.Driver {
	case Secrets:
		sec, err := s.Core.CoreV1().Secrets(r.Namespace).Get(ctx, key, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		sec.APIVersion, sec.Kind = "v1", "Secret"
		data, obj = sec.Data["release"], sec
	default:
		cm, err := s.Core.CoreV1().ConfigMaps(r.Namespace).Get(ctx, key, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		cm.APIVersion, cm.Kind = "v1", "ConfigMap"
		data, obj = []byte(cm.Data["release"]), cm
	}
	rec, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", r.Driver, r.Namespace, key, err)
	}
	return &Stored{Release: r, Record: rec, Object: obj}, nil
}

// Backup is the storage object as it can be restored with kubectl
// replace or create: without the fields the server sets.
func (st *Stored) Backup() runtime.Object {
	o := st.Object.DeepCopyObject()
	m, _ := o.(metav1.Object)
	m.SetResourceVersion("")
	m.SetUID("")
	m.SetManagedFields(nil)
	m.SetCreationTimestamp(metav1.Time{})
	return o
}

// PendingError is a release with an install, upgrade or rollback in
// progress, which helm refuses to upgrade as well.
type PendingError struct{ Release Release }

func (e *PendingError) Error() string {
	return fmt.Sprintf("%s: revision %d is %s: another operation is in progress", e.Release, e.Release.Last, e.Release.LastStatus)
}

// Write stores a repaired manifest as helm-mapkubeapis does: the deployed
// revision becomes superseded, and revision Last+1 is created, deployed,
// with the repaired manifest and hooks, the description Description and
// the time of now as its last deployment. Both are encoded and labelled
// as Helm's drivers write them, in the deployed revision's driver. If the
// new revision cannot be created, the old one is put back as it was. It
// returns the new revision.
func (s *Store) Write(ctx context.Context, st *Stored, repaired *Record) (int, error) {
	if strings.HasPrefix(st.LastStatus, "pending") {
		return 0, &PendingError{Release: st.Release}
	}
	now := s.now()
	old := st.Record.Clone()
	old.SetStatus("superseded")
	next := repaired.Clone()
	rev := st.Last + 1
	next.SetVersion(rev)
	next.SetStatus("deployed")
	next.SetDescription(Description)
	next.SetLastDeployed(now)
	oldData, err := old.Encode()
	if err != nil {
		return 0, err
	}
	nextData, err := next.Encode()
	if err != nil {
		return 0, err
	}
	stamp := strconv.FormatInt(now.Unix(), 10)
	m := st.Object.(metav1.Object)
	oldLabels := maps.Clone(m.GetLabels())
	oldLabels["status"], oldLabels["modifiedAt"] = "superseded", stamp
	newLabels := map[string]string{}
	for k, v := range m.GetLabels() {
		if !slices.Contains(systemLabels, k) {
			newLabels[k] = v
		}
	}
	newLabels["name"], newLabels["owner"], newLabels["status"] = st.Name, owner, "deployed"
	newLabels["version"], newLabels["createdAt"] = strconv.Itoa(rev), stamp

	switch o := st.Object.(type) {
	case *corev1.Secret:
		client := s.Core.CoreV1().Secrets(st.Namespace)
		up := o.DeepCopy()
		up.Labels, up.Data = oldLabels, map[string][]byte{"release": oldData}
		updated, err := client.Update(ctx, up, metav1.UpdateOptions{})
		if err != nil {
			return 0, fmt.Errorf("marking revision %d superseded: %w", st.Deployed, err)
		}
		created := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: Key(st.Name, rev), Namespace: st.Namespace, Labels: newLabels},
			Type: o.Type, Data: map[string][]byte{"release": nextData}}
		if _, err := client.Create(ctx, created, metav1.CreateOptions{}); err != nil {
			back := o.DeepCopy()
			back.ResourceVersion = updated.ResourceVersion
			return 0, restoreError(rev, err, func() error { _, err := client.Update(ctx, back, metav1.UpdateOptions{}); return err }())
		}
	case *corev1.ConfigMap:
		client := s.Core.CoreV1().ConfigMaps(st.Namespace)
		up := o.DeepCopy()
		up.Labels, up.Data = oldLabels, map[string]string{"release": string(oldData)}
		updated, err := client.Update(ctx, up, metav1.UpdateOptions{})
		if err != nil {
			return 0, fmt.Errorf("marking revision %d superseded: %w", st.Deployed, err)
		}
		created := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: Key(st.Name, rev), Namespace: st.Namespace, Labels: newLabels},
			Data: map[string]string{"release": string(nextData)}}
		if _, err := client.Create(ctx, created, metav1.CreateOptions{}); err != nil {
			back := o.DeepCopy()
			back.ResourceVersion = updated.ResourceVersion
			return 0, restoreError(rev, err, func() error { _, err := client.Update(ctx, back, metav1.UpdateOptions{}); return err }())
		}
	default:
		return 0, fmt.Errorf("%s: unknown storage object %T", st.Release, st.Object)
	}
	return rev, nil
}

func restoreError(rev int, err, restore error) error {
	if apierrors.IsAlreadyExists(err) {
		err = fmt.Errorf("%w (another helm operation ran meanwhile?)", err)
	}
	if restore != nil {
		return fmt.Errorf("creating revision %d: %v; putting the deployed revision back failed too, restore it from the backup: %w", rev, err, restore)
	}
	return fmt.Errorf("creating revision %d: %w; the deployed revision was put back as it was", rev, err)
}
