package usage

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

func pdb(user, agent string) Key {
	return Key{Group: "policy", Version: "v1beta1", Resource: "poddisruptionbudgets", User: user, UserAgent: agent}
}

// Repeated requests of one client add up in one entry: count, emulated,
// verbs, first and last seen.
func TestTable_Record_Counts(t *testing.T) {
	tab := New(10)
	k := pdb("alice", "kubectl/v1.36.3")
	tab.Record(Request{Key: k, Verb: "list", Emulated: true, At: t0})
	tab.Record(Request{Key: k, Verb: "get", Emulated: true, At: t0.Add(time.Minute)})
	tab.Record(Request{Key: k, Verb: "get", At: t0.Add(2 * time.Minute)})
	tab.Record(Request{Key: k, Verb: "FROBNICATE", At: t0.Add(3 * time.Minute)})
	want := Snapshot{Capacity: 10, PerUser: 10, Clients: []Entry{{
		Group: "policy", Version: "v1beta1", Resource: "poddisruptionbudgets", User: "alice", UserAgent: "kubectl/v1.36.3",
		Count: 4, Emulated: 2, Verbs: map[string]uint64{"list": 1, "get": 2, "other": 1},
		FirstSeen: t0, LastSeen: t0.Add(3 * time.Minute),
	}}}
	if diff := cmp.Diff(want, tab.Snapshot()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A full table drops the entry seen least recently, counts the eviction,
// and a request of an entry keeps it.
func TestTable_Record_EvictsLeastRecentlySeen(t *testing.T) {
	tab := New(2)
	a, b, c := pdb("a", "x"), pdb("b", "x"), pdb("c", "x")
	tab.Record(Request{Key: a, Verb: "get", At: t0})
	tab.Record(Request{Key: b, Verb: "get", At: t0.Add(time.Second)})
	tab.Record(Request{Key: a, Verb: "get", At: t0.Add(2 * time.Second)}) // a is now the most recent
	tab.Record(Request{Key: c, Verb: "get", At: t0.Add(3 * time.Second)}) // b goes
	s := tab.Snapshot()
	var users []string
	for _, e := range s.Clients {
		users = append(users, e.User)
	}
	if diff := cmp.Diff([]string{"c", "a"}, users); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if s.Evicted != 1 || tab.Evicted() != 1 || tab.Len() != 2 {
		t.Errorf("evicted %d (%d), len %d; want 1 and 2", s.Evicted, tab.Evicted(), tab.Len())
	}
	// b comes back as a new entry: its first count was forgotten.
	tab.Record(Request{Key: b, Verb: "get", At: t0.Add(4 * time.Second)})
	s = tab.Snapshot()
	if s.Clients[0].User != "b" || s.Clients[0].Count != 1 || !s.Clients[0].FirstSeen.Equal(t0.Add(4*time.Second)) || s.Evicted != 2 {
		t.Errorf("after b again: %+v", s)
	}
}

// Thousands of distinct clients never grow the table past its size.
func TestTable_Record_Bounded(t *testing.T) {
	tab := New(100)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				tab.Record(Request{Key: pdb(fmt.Sprintf("user-%d-%d", g, i), "x"), Verb: "get", At: t0.Add(time.Duration(i) * time.Millisecond)})
			}
		})
	}
	wg.Wait()
	s := tab.Snapshot()
	if len(s.Clients) != 100 || tab.Len() != 100 || s.Evicted != 4000-100 {
		t.Errorf("%d entries, evicted %d; want 100 and 3900", len(s.Clients), s.Evicted)
	}
}

// Snapshots list the most recently seen first; equal times by key.
func TestTable_Snapshot_Order(t *testing.T) {
	tab := New(10)
	tab.Record(Request{Key: pdb("old", "x"), Verb: "get", At: t0})
	tab.Record(Request{Key: pdb("new", "x"), Verb: "get", At: t0.Add(time.Hour)})
	tab.Record(Request{Key: pdb("b-tie", "x"), Verb: "get", At: t0.Add(time.Minute)})
	tab.Record(Request{Key: pdb("a-tie", "x"), Verb: "get", At: t0.Add(time.Minute)})
	var users []string
	for _, e := range tab.Snapshot().Clients {
		users = append(users, e.User)
	}
	if diff := cmp.Diff([]string{"new", "a-tie", "b-tie", "old"}, users); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// A nil table (size 0) records nothing and snapshots as empty.
func TestNew_ZeroIsOff(t *testing.T) {
	tab := New(0)
	tab.Record(Request{Key: pdb("a", "x"), Verb: "get", At: t0})
	s := tab.Snapshot()
	if tab != nil || s.Capacity != 0 || s.Clients == nil || len(s.Clients) != 0 || tab.Len() != 0 {
		t.Errorf("New(0): %v, %+v", tab, s)
	}
}

// User agents and user names are cut to their bound at a character
// boundary, and what does not print becomes U+FFFD.
func TestClean(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"kubectl/v1.36.3 (linux/amd64)", 64, "kubectl/v1.36.3 (linux/amd64)"},
		{strings.Repeat("a", 300), 10, strings.Repeat("a", 10)},
		{"\x1b[31mred", 10, "\uFFFD[31mred"},
		{"bad\xff\xfeutf8", 10, "bad\uFFFDutf8"},
		{"csi\u009b2J", 10, "csi\uFFFD2J"},
		{"héllo wörld", 10, "héllo wö"},
		{"héllo wörld", 9, "héllo w"},
		{"tab\there", 10, "tab\uFFFDhere"},
	} {
		if got := Clean(tc.in, tc.max); got != tc.want {
			t.Errorf("Clean(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

// Record bounds what it keeps.
func TestTable_Record_CleansKey(t *testing.T) {
	tab := New(1)
	tab.Record(Request{Key: pdb("bob", strings.Repeat("x", 10000)+"\x07"), Verb: "get", At: t0})
	e := tab.Snapshot().Clients[0]
	if len(e.UserAgent) != MaxUserAgentBytes {
		t.Errorf("user agent of %d bytes kept", len(e.UserAgent))
	}
}
