package helmrelease_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvpctl/mvpctl/scan/helmrelease"
)

// The fixtures are "release" values written by the Helm SDK's Secrets
// driver (e2e/helm TestFixtures_EncodedByHelm writes them).
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".release"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(data)
}

var fixtures = []string{"sh.helm.release.v1.shop.v1", "sh.helm.release.v1.legacy.v3"}

func TestRecord_Encode_ByteExact(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			data := fixture(t, name)
			rec, err := helmrelease.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			js, err := helmrelease.DecodeJSON(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := rec.JSON(); !bytes.Equal(got, js) {
				t.Errorf("JSON differs from Helm's:\n%s\nwant\n%s", got, js)
			}
			out, err := rec.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, data) {
				t.Errorf("encoding a decoded record again differs from Helm's encoding")
			}
		})
	}
}

// helmRelease mirrors the JSON of Helm's release.Release.
type helmRelease struct {
	Name     string         `json:"name"`
	Info     map[string]any `json:"info"`
	Chart    map[string]any `json:"chart"`
	Config   map[string]any `json:"config"`
	Manifest string         `json:"manifest"`
	Hooks    []struct {
		Name, Path, Manifest string
		Events               []string `json:"events"`
	} `json:"hooks"`
	Version   int    `json:"version"`
	Namespace string `json:"namespace"`
}

func TestRecord_Set(t *testing.T) {
	data := fixture(t, "sh.helm.release.v1.shop.v1")
	rec, err := helmrelease.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Name() != "shop" || rec.Namespace() != "default" || rec.Version() != 1 || rec.Status() != "deployed" || rec.Description() != "Install complete" {
		t.Fatalf("decoded %s/%s v%d %s %q", rec.Namespace(), rec.Name(), rec.Version(), rec.Status(), rec.Description())
	}
	orig := rec.Clone()
	at := time.Date(2026, 12, 2, 13, 0, 0, 5, time.UTC)
	rec.SetManifest("kind: X\n<&>\n")
	rec.SetVersion(7)
	rec.SetStatus("superseded")
	rec.SetDescription(helmrelease.Description)
	rec.SetLastDeployed(at)
	hooks := rec.HookManifests()
	if len(hooks) != 1 {
		t.Fatalf("hooks %q", hooks)
	}
	rec.SetHookManifest(0, "hook")
	var before, after helmRelease
	if err := json.Unmarshal(orig.JSON(), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rec.JSON(), &after); err != nil {
		t.Fatal(err)
	}
	if after.Manifest != "kind: X\n<&>\n" || after.Version != 7 || after.Info["status"] != "superseded" ||
		after.Info["description"] != helmrelease.Description || after.Info["last_deployed"] != "2026-12-02T13:00:00.000000005Z" || after.Hooks[0].Manifest != "hook" {
		t.Errorf("after setting: %+v", after)
	}
	// Everything else is as it was.
	if after.Info["first_deployed"] != before.Info["first_deployed"] || after.Hooks[0].Path != before.Hooks[0].Path ||
		!jsonEqual(after.Chart, before.Chart) || !jsonEqual(after.Config, before.Config) || after.Name != before.Name {
		t.Errorf("fields not set changed")
	}
	// Strings are written as encoding/json writes them (Helm's json.Marshal).
	if !strings.Contains(string(rec.JSON()), `"manifest":"kind: X\n\u003c\u0026\u003e\n"`) {
		t.Errorf("manifest not escaped as encoding/json does: %s", rec.JSON())
	}
	// The clone did not change.
	if orig.Version() != 1 || orig.Status() != "deployed" || orig.HookManifests()[0] == "hook" {
		t.Errorf("Clone shares state")
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestDecode_Errors(t *testing.T) {
	for name, data := range map[string]string{
		"base64":   "not base64!",
		"gzip":     base64.StdEncoding.EncodeToString([]byte{0x1f, 0x8b, 0x08, 0, 1}),
		"not JSON": base64.StdEncoding.EncodeToString([]byte("[1]")),
		"trailing": base64.StdEncoding.EncodeToString([]byte(`{"name":"x"} {}`)),
		"name":     base64.StdEncoding.EncodeToString([]byte(`{"name":1}`)),
	} {
		if _, err := helmrelease.Decode([]byte(data)); err == nil || !strings.HasPrefix(err.Error(), "helm release: ") {
			t.Errorf("%s: error %v", name, err)
		}
	}
	// Releases of early Helm 3 are not compressed.
	rec, err := helmrelease.Decode([]byte(base64.StdEncoding.EncodeToString([]byte(`{"name":"old","version":2}`))))
	if err != nil || rec.Name() != "old" || rec.Version() != 2 {
		t.Errorf("uncompressed: %v %v", rec, err)
	}
}
