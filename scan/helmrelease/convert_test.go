package helmrelease_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/rules/builtin"
	"github.com/mvpctl/mvpctl/scan/helmrelease"
)

func options(t *testing.T, remove bool) helmrelease.ConvertOptions {
	t.Helper()
	rs, err := builtin.With(nil)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := rules.Compile(rs, rules.CompileOptions{Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	rel, err := builtin.ParseRelease("v1.36")
	if err != nil {
		t.Fatal(err)
	}
	return helmrelease.ConvertOptions{Plan: engine.Plan{Release: rel}, RemoveUnconvertible: remove,
		Converter: engine.NewConverter(compiled, engine.Options{Strict: true, KeepGoing: true})}
}

func decode(t *testing.T, name string) *helmrelease.Record {
	t.Helper()
	rec, err := helmrelease.Decode(fixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestConvert_Shop(t *testing.T) {
	rec := decode(t, "sh.helm.release.v1.shop.v1")
	c, err := helmrelease.Convert(context.Background(), rec, options(t, false))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range c.Changes {
		if ch.Err != nil {
			t.Errorf("%s: %v", ch.Source, ch.Err)
		}
		got = append(got, ch.Source+" "+ch.Kind+" "+ch.Name+" "+ch.From+" -> "+ch.To)
	}
	want := []string{
		"shop/templates/cronjob.yaml CronJob shop-report batch/v1beta1 -> batch/v1",
		"shop/templates/ingress.yaml Ingress shop extensions/v1beta1 -> networking.k8s.io/v1",
		"shop/templates/tests/smoke.yaml Ingress shop-smoke networking.k8s.io/v1beta1 -> networking.k8s.io/v1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The Service needs no change: its document is kept byte for byte.
	docs := strings.Split(rec.Manifest(), "\n---\n")
	var service string
	for _, d := range docs {
		if strings.Contains(d, "# Source: shop/templates/service.yaml") {
			service = d
		}
	}
	if service == "" || !strings.Contains(c.Manifest, service) {
		t.Errorf("the Service document changed:\n%s", c.Manifest)
	}
	// Fields are converted, not only apiVersion; no round-trip annotation.
	for _, s := range []string{
		"# Source: shop/templates/ingress.yaml\napiVersion: networking.k8s.io/v1\n",
		"service:\n            name: shop\n            port:\n              number: 80",
		"pathType: ImplementationSpecific",
		"# Source: shop/templates/cronjob.yaml\napiVersion: batch/v1\n",
	} {
		if !strings.Contains(c.Manifest, s) {
			t.Errorf("converted manifest lacks %q:\n%s", s, c.Manifest)
		}
	}
	if strings.Contains(c.Manifest, rules.ConversionDataAnnotation) || strings.Contains(c.Manifest, "serviceName") {
		t.Errorf("converted manifest:\n%s", c.Manifest)
	}
	if !strings.Contains(c.Hooks[0], "apiVersion: networking.k8s.io/v1\n") || !strings.Contains(c.Hooks[0], "defaultBackend:") {
		t.Errorf("hook:\n%s", c.Hooks[0])
	}
	if !c.Changed(rec) || c.Failed() != 0 {
		t.Errorf("Changed %v Failed %d", c.Changed(rec), c.Failed())
	}
	// Applied, the record has the converted manifest; converting it again
	// changes nothing.
	fixed := c.Apply(rec)
	again, err := helmrelease.Convert(context.Background(), fixed, options(t, false))
	if err != nil || again.Changed(fixed) || len(again.Changes) != 0 {
		t.Errorf("second conversion: %v %+v", err, again)
	}
	if rec.Manifest() == fixed.Manifest() {
		t.Errorf("Apply changed the original")
	}
}

func TestConvert_NoReplacement(t *testing.T) {
	rec := decode(t, "sh.helm.release.v1.legacy.v3")
	c, err := helmrelease.Convert(context.Background(), rec, options(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if c.Failed() != 1 || len(c.Changes) != 2 {
		t.Fatalf("changes %+v", c.Changes)
	}
	psp := c.Changes[0]
	if psp.Kind != "PodSecurityPolicy" || !psp.Unconvertible || !strings.Contains(psp.Err.Error(), "no replacement") {
		t.Errorf("PodSecurityPolicy: %+v", psp)
	}
	if !strings.Contains(c.Manifest, "kind: PodSecurityPolicy") || !strings.Contains(c.Manifest, "apiVersion: apps/v1") {
		t.Errorf("manifest:\n%s", c.Manifest)
	}

	c, err = helmrelease.Convert(context.Background(), rec, options(t, true))
	if err != nil {
		t.Fatal(err)
	}
	if c.Failed() != 0 || !c.Changes[0].Removed || strings.Contains(c.Manifest, "PodSecurityPolicy") {
		t.Errorf("with RemoveUnconvertible: %+v\n%s", c.Changes, c.Manifest)
	}
	if !strings.HasPrefix(c.Manifest, "---\n# Source: legacy/templates/deployment.yaml\napiVersion: apps/v1\n") {
		t.Errorf("manifest:\n%s", c.Manifest)
	}
}
