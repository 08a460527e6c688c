package usage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

// users counts the entries of a snapshot by user.
func users(s Snapshot) map[string]int {
	out := map[string]int{}
	for _, e := range s.Clients {
		out[e.User]++
	}
	return out
}

// A user rotating its User-Agent header replaces its own entries once at
// its quota, and never another user's.
func TestTable_Record_PerUserQuota(t *testing.T) {
	tab := newTable(10, 3)
	tab.Record(Request{Key: pdb("alice", "kubectl"), Verb: "get", At: t0})
	tab.Record(Request{Key: pdb("bob", "kubectl"), Verb: "get", At: t0})
	for i := range 50 {
		tab.Record(Request{Key: pdb("mallory", fmt.Sprintf("agent-%d", i)), Verb: "get", At: t0.Add(time.Duration(i+1) * time.Second)})
	}
	s := tab.Snapshot()
	if diff := cmp.Diff(map[string]int{"alice": 1, "bob": 1, "mallory": 3}, users(s)); diff != "" {
		t.Errorf("entries by user (-want +got):\n%s", diff)
	}
	if s.Evicted != 47 {
		t.Errorf("evicted %d, want 47", s.Evicted)
	}
	var agents []string
	for _, e := range s.Clients {
		if e.User == "mallory" {
			agents = append(agents, e.UserAgent)
		}
	}
	if diff := cmp.Diff([]string{"agent-49", "agent-48", "agent-47"}, agents); diff != "" {
		t.Errorf("mallory keeps her most recent (-want +got):\n%s", diff)
	}
}

// A full table makes room among the entries of the users holding the
// most: many users, each under the quota, do not flush a small user.
func TestTable_Record_FullTableEvictsLargestHolders(t *testing.T) {
	tab := newTable(6, 4)
	tab.Record(Request{Key: pdb("alice", "kubectl"), Verb: "get", At: t0})
	for i := range 4 {
		tab.Record(Request{Key: pdb("mallory", fmt.Sprintf("m-%d", i)), Verb: "get", At: t0.Add(time.Duration(i+1) * time.Second)})
	}
	for i := range 10 {
		tab.Record(Request{Key: pdb("trudy", fmt.Sprintf("t-%d", i)), Verb: "get", At: t0.Add(time.Duration(i+10) * time.Second)})
	}
	// After trudy's second entry the table is full: each of trudy's new
	// entries takes one of mallory's while mallory holds more, then
	// trudy's own.
	if diff := cmp.Diff(map[string]int{"alice": 1, "mallory": 2, "trudy": 3}, users(tab.Snapshot())); diff != "" {
		t.Errorf("entries by user (-want +got):\n%s", diff)
	}
}

// Between users holding as many entries, the least recently seen goes.
func TestTable_Record_EqualHoldersLeastRecentlySeen(t *testing.T) {
	tab := newTable(3, 2)
	tab.Record(Request{Key: pdb("a", "x"), Verb: "get", At: t0})
	tab.Record(Request{Key: pdb("b", "x"), Verb: "get", At: t0.Add(1 * time.Second)})
	tab.Record(Request{Key: pdb("c", "x"), Verb: "get", At: t0.Add(2 * time.Second)})
	tab.Record(Request{Key: pdb("a", "x"), Verb: "get", At: t0.Add(3 * time.Second)})
	tab.Record(Request{Key: pdb("d", "x"), Verb: "get", At: t0.Add(4 * time.Second)})
	if diff := cmp.Diff(map[string]int{"a": 1, "c": 1, "d": 1}, users(tab.Snapshot())); diff != "" {
		t.Errorf("entries by user (-want +got):\n%s", diff)
	}
}

// New caps the size at MaxSize.
func TestNew_MaxSize(t *testing.T) {
	if got := New(MaxSize * 10).Snapshot().Capacity; got != MaxSize {
		t.Errorf("capacity %d, want %d", got, MaxSize)
	}
}

// worstEntry is an entry whose every string is at its bound and escapes to
// twice its bytes, with every verb counted at the maximum.
func worstEntry(user string) Entry {
	e := Entry{
		Group: strings.Repeat(`"`, MaxGroupBytes), Version: strings.Repeat(`\`, MaxVersionBytes),
		Resource: strings.Repeat(`"`, MaxResourceBytes), User: Clean(user+strings.Repeat(`"`, MaxUserBytes), MaxUserBytes),
		UserAgent: strings.Repeat(`\`, MaxUserAgentBytes),
		Count:     math.MaxUint64, Emulated: math.MaxUint64, Verbs: map[string]uint64{},
		FirstSeen: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("", -(23*3600+59*60))),
	}
	e.LastSeen = e.FirstSeen
	for _, v := range Verbs {
		e.Verbs[v] = math.MaxUint64
	}
	return e
}

// One entry, as Encode writes it, stays within MaxEntryBytes however its
// strings escape; a report of n such entries within MaxReportBytes(n), and
// it reads back as it was.
func TestMaxEntryBytes(t *testing.T) {
	var one bytes.Buffer
	if err := Encode(&one, Snapshot{Capacity: MaxSize, PerUser: DefaultPerUser, Evicted: math.MaxUint64, Clients: []Entry{worstEntry("a")}}); err != nil {
		t.Fatal(err)
	}
	var empty bytes.Buffer
	if err := Encode(&empty, Snapshot{Capacity: MaxSize, PerUser: DefaultPerUser, Evicted: math.MaxUint64, Clients: []Entry{}}); err != nil {
		t.Fatal(err)
	}
	if n := one.Len() - empty.Len(); n > MaxEntryBytes {
		t.Errorf("an entry takes %d bytes, more than MaxEntryBytes (%d)", n, MaxEntryBytes)
	}
	if int64(empty.Len()) > MaxReportBytes(0) {
		t.Errorf("an empty report takes %d bytes, more than %d", empty.Len(), MaxReportBytes(0))
	}
	s := Snapshot{Capacity: 50, PerUser: 1, Evicted: 7}
	for i := range 50 {
		s.Clients = append(s.Clients, worstEntry(fmt.Sprint(i)))
	}
	var full bytes.Buffer
	if err := Encode(&full, s); err != nil {
		t.Fatal(err)
	}
	if int64(full.Len()) > MaxReportBytes(50) {
		t.Errorf("a full report of 50 takes %d bytes, more than %d", full.Len(), MaxReportBytes(50))
	}
	var back Snapshot
	if err := json.Unmarshal(full.Bytes(), &back); err != nil {
		t.Fatalf("%v\n%.500s", err, full.String())
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// checkInvariants checks a table's bounds and its index structures.
func checkInvariants(t *testing.T, tab *Table) {
	t.Helper()
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if len(tab.entries) > tab.size || tab.all.Len() != len(tab.entries) {
		t.Fatalf("%d entries (%d listed), size %d", len(tab.entries), tab.all.Len(), tab.size)
	}
	n := 0
	for u, h := range tab.users {
		c := h.entries.Len()
		if c == 0 || c > tab.perUser || h.user != u {
			t.Fatalf("user %q holds %d entries, quota %d", u, c, tab.perUser)
		}
		if h.elem == nil || h.elem.Value.(*holder) != h || c > tab.most {
			t.Fatalf("user %q (%d) not filed (most %d)", u, c, tab.most)
		}
		n += c
	}
	if n != len(tab.entries) {
		t.Fatalf("users hold %d entries, the table %d", n, len(tab.entries))
	}
	if tab.most > 0 && tab.byCount[tab.most].Len() == 0 {
		t.Fatalf("most %d has no user", tab.most)
	}
	for _, e := range tab.entries {
		k := e.key
		if len(k.User) > MaxUserBytes || len(k.UserAgent) > MaxUserAgentBytes || len(k.Group) > MaxGroupBytes ||
			len(k.Version) > MaxVersionBytes || len(k.Resource) > MaxResourceBytes {
			t.Fatalf("entry %+v over a bound", k)
		}
	}
}

// FuzzTable_Record records requests of a few users, from the fuzzer's
// bytes, in a small table, and checks after each one: the size and the
// per-user quota hold, and a new entry of one user took an entry of
// another only when that one held more entries than the first.
func FuzzTable_Record(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, uint8(4), uint8(2))
	f.Add([]byte("mallory rotates her user agents and evicts nobody"), uint8(8), uint8(3))
	f.Add(bytes.Repeat([]byte{1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6}, 20), uint8(5), uint8(5))
	f.Add([]byte{0xff, 0xfe, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70}, uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, ops []byte, size, perUser uint8) {
		tab := newTable(int(size%16)+1, int(perUser%8)+1)
		for i := 0; i+1 < len(ops); i += 2 {
			user := fmt.Sprintf("u%d", ops[i]%5)
			if ops[i]%5 == 4 {
				user = strings.Repeat("\x1b", 600) // cut and cleaned
			}
			before := users(tab.Snapshot())
			k := pdb(user, string(ops[i+1:i+2])+strings.Repeat("x", int(ops[i+1]%3)*200))
			_, existed := tab.entries[Key{Group: k.Group, Version: k.Version, Resource: k.Resource, User: Clean(k.User, MaxUserBytes), UserAgent: Clean(k.UserAgent, MaxUserAgentBytes)}]
			tab.Record(Request{Key: k, Verb: string(ops[i : i+1]), At: t0.Add(time.Duration(binary.LittleEndian.Uint16([]byte{ops[i], ops[i+1]})) * time.Second)})
			checkInvariants(t, tab)
			after := users(tab.Snapshot())
			me := Clean(user, MaxUserBytes)
			for u, n := range before {
				if u == me || after[u] >= n {
					continue
				}
				if existed || after[u] != n-1 || n <= before[me] {
					t.Fatalf("a request of %q (held %d, existed %v) took an entry of %q (held %d, now %d)", me, before[me], existed, u, n, after[u])
				}
			}
		}
	})
}

// FuzzClean: whatever the input, the output is within the bound, valid
// UTF-8, printable, and a prefix of the cleaned input.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"kubectl/v1.36.3", "\x1b[31m", "héllo", "\xff\xfe", "\u2028\u0085"} {
		f.Add(s, uint16(8))
	}
	f.Fuzz(func(t *testing.T, s string, max uint16) {
		m := int(max % 600)
		got := Clean(s, m)
		if len(got) > m {
			t.Fatalf("Clean(%q, %d) = %q: %d bytes", s, m, got, len(got))
		}
		if !strings.HasPrefix(Clean(s, len(s)*3+3), got) {
			t.Fatalf("Clean(%q, %d) = %q: not a prefix of the whole", s, m, got)
		}
		for _, r := range got {
			if r != '\uFFFD' && !(r >= ' ' && r <= '~') && !printable(r) {
				t.Fatalf("Clean(%q) keeps %U", s, r)
			}
		}
		b, _ := json.Marshal(got)
		if len(b) > 2*len(got)+2 && !strings.ContainsAny(got, "<>&") {
			t.Fatalf("Clean(%q) = %q escapes to %d bytes", s, got, len(b))
		}
	})
}

func printable(r rune) bool { return unicode.IsPrint(r) }
