package emulation

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/mvpctl/mvpctl/engine"
)

// store is a fake backend holding one v1beta1 object with kube-apiserver's
// optimistic concurrency, for the read-convert-patch-convert-write path:
// GET, PUT (a resourceVersion in the body is a precondition) and PATCH
// (JSON and merge patches with the apiserver's json-patch; a patched
// resourceVersion other than the current one is a conflict).
type store struct {
	mu  sync.Mutex
	obj map[string]any
	rv  int
	// conflicts is the number of writes before which another writer
	// changes the object (concurrent, or just its resourceVersion).
	conflicts  int
	concurrent func(obj map[string]any)
	verbs      []string // each request's method, and a PATCH's content type
	writes     int
	patches    []string // the bodies of the PATCHes
}

func (s *store) handle(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	verb := r.Method
	if r.Method == http.MethodPatch {
		verb += " " + r.Header.Get("Content-Type")
	}
	s.verbs = append(s.verbs, verb)
	if r.Method == http.MethodGet {
		b, _ := json.Marshal(s.obj)
		w.Write(b)
		return
	}
	if r.Method != http.MethodPut && r.Method != http.MethodPatch {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	s.writes++
	if s.conflicts > 0 {
		s.conflicts--
		if s.concurrent != nil {
			s.concurrent(s.obj)
		}
		s.rv++
		s.obj["metadata"].(map[string]any)["resourceVersion"] = fmt.Sprint(s.rv)
	}
	body, _ := io.ReadAll(r.Body)
	in, code := s.written(r, body)
	if code == 0 {
		if rv, _ := in["metadata"].(map[string]any)["resourceVersion"].(string); rv != "" && rv != fmt.Sprint(s.rv) {
			code = http.StatusConflict
		}
	}
	switch code {
	case http.StatusConflict:
		w.WriteHeader(code)
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409,"message":"the object has been modified"}`)
		return
	case http.StatusUnprocessableEntity:
		w.WriteHeader(code)
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":422,"message":"the server rejected our request due to an error in our request"}`)
		return
	}
	s.rv++
	in["metadata"].(map[string]any)["resourceVersion"] = fmt.Sprint(s.rv)
	s.obj = in
	b, _ := json.Marshal(s.obj)
	w.Write(b)
}

// written is the object a PUT or PATCH would write, or the error code.
func (s *store) written(r *http.Request, body []byte) (map[string]any, int) {
	if r.Method == http.MethodPut {
		in, err := engine.DecodeObject(body)
		if err != nil {
			return nil, http.StatusBadRequest
		}
		return in, 0
	}
	s.patches = append(s.patches, string(body))
	cur, _ := json.Marshal(s.obj)
	var out []byte
	var err error
	switch r.Header.Get("Content-Type") {
	case "application/json-patch+json":
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(body); err == nil {
			out, err = p.Apply(cur)
		}
	case "application/merge-patch+json":
		out, err = jsonpatch.MergePatch(cur, body)
	default:
		return nil, http.StatusUnsupportedMediaType
	}
	if err != nil {
		return nil, http.StatusUnprocessableEntity
	}
	in, err := engine.DecodeObject(out)
	if err != nil {
		return nil, http.StatusUnprocessableEntity
	}
	return in, 0
}

func newStore(t *testing.T, served string) *store {
	t.Helper()
	s := &store{rv: 42}
	var err error
	if s.obj, err = engine.DecodeObject([]byte(served)); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *store) snapshot() (writes int, verbs []string, obj map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes, append([]string(nil), s.verbs...), s.obj
}
