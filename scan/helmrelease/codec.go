package helmrelease

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// MaxRelease bounds a decoded release (its JSON after gunzip); the
// apiserver bounds the stored record to about 1 MiB.
const MaxRelease = 64 << 20

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// Record is one revision of a Helm release as stored: its JSON kept field by
// field in Helm's order.
type Record struct {
	fields object
	info   object
	// hooks are the elements of "hooks", each kept field by field.
	hooks []object
}

// field is one member of a JSON object: its key and its value as written.
type field struct {
	key string
	raw json.RawMessage
}

// object is a JSON object whose members keep their order and bytes.
type object []field

func (o object) get(key string) (json.RawMessage, bool) {
	for _, f := range o {
		if f.key == key {
			return f.raw, true
		}
	}
	return nil, false
}

// set replaces a member's value, or inserts it before the first of after
// that is present (the members that follow it in Helm's struct), or at the
// end.
func (o *object) set(key string, raw json.RawMessage, after ...string) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].raw = raw
			return
		}
	}
	for i, f := range *o {
		for _, a := range after {
			if f.key == a {
				*o = append((*o)[:i], append(object{{key, raw}}, (*o)[i:]...)...)
				return
			}
		}
	}
	*o = append(*o, field{key, raw})
}

func (o object) marshal() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.raw)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// parseObject reads a JSON object's members in order, each value as
// written.
func parseObject(data []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var o object
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		o = append(o, field{key, raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return o, nil
}

// Decode decodes the "release" value of a Helm storage object as Helm
// does: base64, then gunzip if the gzip magic is there (early Helm 3
// releases are not compressed), then JSON. The decompressed size is
// bounded by MaxRelease.
func Decode(data []byte) (*Record, error) {
	js, err := DecodeJSON(data)
	if err != nil {
		return nil, err
	}
	return ParseJSON(js)
}

// DecodeJSON returns the release JSON of a "release" value.
func DecodeJSON(data []byte) ([]byte, error) {
	data = bytes.TrimSpace(data)
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(raw, data)
	if err != nil {
		return nil, fmt.Errorf("helm release: base64: %w", err)
	}
	raw = raw[:n]
	if !bytes.HasPrefix(raw, gzipMagic) {
		if len(raw) > MaxRelease {
			return nil, fmt.Errorf("helm release: larger than %d MiB", MaxRelease>>20)
		}
		return raw, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("helm release: gzip: %w", err)
	}
	defer zr.Close()
	body, err := io.ReadAll(io.LimitReader(zr, MaxRelease+1))
	if err != nil {
		return nil, fmt.Errorf("helm release: gzip: %w", err)
	}
	if len(body) > MaxRelease {
		return nil, fmt.Errorf("helm release: larger than %d MiB decompressed", MaxRelease>>20)
	}
	return body, nil
}

// ParseJSON reads a release's JSON.
func ParseJSON(js []byte) (*Record, error) {
	fields, err := parseObject(js)
	if err != nil {
		return nil, fmt.Errorf("helm release: %w", err)
	}
	r := &Record{fields: fields}
	if raw, ok := fields.get("info"); ok && !isNull(raw) {
		if r.info, err = parseObject(raw); err != nil {
			return nil, fmt.Errorf("helm release: info: %w", err)
		}
	}
	if raw, ok := fields.get("hooks"); ok && !isNull(raw) {
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return nil, fmt.Errorf("helm release: hooks: %w", err)
		}
		for i, e := range elems {
			h, err := parseObject(e)
			if err != nil {
				return nil, fmt.Errorf("helm release: hooks[%d]: %w", i, err)
			}
			r.hooks = append(r.hooks, h)
		}
	}
	for _, k := range []string{"name", "namespace", "manifest"} {
		if raw, ok := fields.get(k); ok {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, fmt.Errorf("helm release: %s: %w", k, err)
			}
		}
	}
	if raw, ok := fields.get("version"); ok {
		var v int
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("helm release: version: %w", err)
		}
	}
	return r, nil
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// JSON is the release as Helm's json.Marshal would write it with the
// values set here.
func (r *Record) JSON() []byte {
	fields := r.fields
	if r.info != nil {
		fields.set("info", r.info.marshal())
	}
	if r.hooks != nil {
		var b bytes.Buffer
		b.WriteByte('[')
		for i, h := range r.hooks {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(h.marshal())
		}
		b.WriteByte(']')
		fields.set("hooks", b.Bytes())
	}
	return fields.marshal()
}

// Encode encodes the release as Helm's storage drivers do: JSON, gzip at
// BestCompression, standard base64.
func (r *Record) Encode() ([]byte, error) {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(r.JSON()); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(buf.Len()))
	base64.StdEncoding.Encode(out, buf.Bytes())
	return out, nil
}

func (r *Record) str(o object, key string) string {
	var s string
	if raw, ok := o.get(key); ok {
		_ = json.Unmarshal(raw, &s) // checked by ParseJSON for the fields it reads
	}
	return s
}

// Name is the release's name.
func (r *Record) Name() string { return r.str(r.fields, "name") }

// Namespace is the release's namespace.
func (r *Record) Namespace() string { return r.str(r.fields, "namespace") }

// Manifest is the YAML documents Helm rendered and applied.
func (r *Record) Manifest() string { return r.str(r.fields, "manifest") }

// Status is info.status: deployed, superseded, failed, pending-upgrade...
func (r *Record) Status() string { return r.str(r.info, "status") }

// Description is info.description, the "log entry" helm history shows.
func (r *Record) Description() string { return r.str(r.info, "description") }

// Version is the revision.
func (r *Record) Version() int {
	var v int
	if raw, ok := r.fields.get("version"); ok {
		_ = json.Unmarshal(raw, &v)
	}
	return v
}

// HookManifests are the manifests of the release's hooks, in order.
func (r *Record) HookManifests() []string {
	out := make([]string, len(r.hooks))
	for i, h := range r.hooks {
		out[i] = r.str(h, "manifest")
	}
	return out
}

// HookPath is the chart template of hook i.
func (r *Record) HookPath(i int) string { return r.str(r.hooks[i], "path") }

func marshalString(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// The members of Helm's Release and Info structs that follow each member a
// repair may add, for placing it where json.Marshal would.
var (
	afterManifest    = []string{"hooks", "version", "namespace", "apply_method"}
	afterVersion     = []string{"namespace", "apply_method"}
	afterLastDeploy  = []string{"deleted", "description", "status", "rollback_revision", "notes", "resources"}
	afterDescription = []string{"status", "rollback_revision", "notes", "resources"}
	afterStatus      = []string{"rollback_revision", "notes", "resources"}
)

// SetManifest replaces the manifest.
func (r *Record) SetManifest(s string) { r.fields.set("manifest", marshalString(s), afterManifest...) }

// SetHookManifest replaces the manifest of hook i.
func (r *Record) SetHookManifest(i int, s string) {
	r.hooks[i].set("manifest", marshalString(s), "events", "last_run", "weight", "delete_policies", "output_log_policies")
}

// SetVersion sets the revision.
func (r *Record) SetVersion(v int) {
	b, _ := json.Marshal(v)
	r.fields.set("version", b, afterVersion...)
}

// SetStatus sets info.status.
func (r *Record) SetStatus(s string) { r.infoSet("status", marshalString(s), afterStatus...) }

// SetDescription sets info.description.
func (r *Record) SetDescription(s string) {
	r.infoSet("description", marshalString(s), afterDescription...)
}

// SetLastDeployed sets info.last_deployed, written as Helm writes times
// (time.Time's RFC 3339 with nanoseconds).
func (r *Record) SetLastDeployed(t time.Time) {
	b, _ := t.MarshalJSON()
	r.infoSet("last_deployed", b, afterLastDeploy...)
}

func (r *Record) infoSet(key string, raw json.RawMessage, after ...string) {
	if r.info == nil {
		r.info = object{}
	}
	r.info.set(key, raw, after...)
}

// Clone returns a copy that can be changed without changing r.
func (r *Record) Clone() *Record {
	c := &Record{fields: append(object(nil), r.fields...)}
	if r.info != nil {
		c.info = append(object{}, r.info...)
	}
	for _, h := range r.hooks {
		c.hooks = append(c.hooks, append(object{}, h...))
	}
	return c
}
