// Package usage counts requests for old API versions by the client that
// made them, in a table of bounded size that forgets the client seen least
// recently first. The proxy serves it at /debug/clients.
package usage

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/utils/lru"
)

// Bounds of the strings a client chooses or the cluster names: a client
// that sends a long User-Agent must not make an entry large.
const (
	MaxUserAgentBytes = 256
	MaxUserBytes      = 512
)

// Key is what the table counts by.
type Key struct {
	Group, Version, Resource string
	// User is the authenticated user name; UserAgent the client's
	// User-Agent header.
	User, UserAgent string
}

// Request is one request to count.
type Request struct {
	Key
	// Verb is the request's Kubernetes verb (get, list, watch, ...).
	Verb string
	// Emulated says that the proxy converted the request to another version.
	Emulated bool
	// At is when the request was made.
	At time.Time
}

// Entry is one row of the table, as /debug/clients serves it.
type Entry struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Resource  string `json:"resource"`
	User      string `json:"user"`
	UserAgent string `json:"userAgent"`
	// Count is the number of requests; Emulated how many of them the proxy
	// converted.
	Count    uint64 `json:"count"`
	Emulated uint64 `json:"emulated"`
	// Verbs counts the requests by verb; verbs Kubernetes does not define
	// are counted as "other".
	Verbs     map[string]uint64 `json:"verbs"`
	FirstSeen time.Time         `json:"firstSeen"`
	LastSeen  time.Time         `json:"lastSeen"`
}

// Snapshot is the whole table at one moment.
type Snapshot struct {
	// Capacity is the number of entries the table holds at most; zero when
	// the table is off.
	Capacity int `json:"capacity"`
	// Evicted counts the entries dropped to make room for new ones.
	Evicted uint64 `json:"evicted"`
	// Clients are the entries, the most recently seen first.
	Clients []Entry `json:"clients"`
}

// verbs are the verbs Kubernetes' request parsing yields for API resources;
// anything else is "other", so that a client cannot add keys to an entry.
var verbs = [...]string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "proxy", "other"}

type entry struct {
	count, emulated     uint64
	verbs               [len(verbs)]uint64
	firstSeen, lastSeen time.Time
}

// Table is the bounded table. The zero value is not usable; use [New].
type Table struct {
	mu      sync.Mutex
	size    int
	lru     *lru.Cache     // Key → *entry, in the order of last use
	entries map[Key]*entry // the same entries, for snapshots
	evicted uint64
}

// New returns a table of at most size entries; nil when size is not
// positive (a nil table records nothing).
func New(size int) *Table {
	if size <= 0 {
		return nil
	}
	t := &Table{size: size, entries: make(map[Key]*entry)}
	t.lru = lru.NewWithEvictionFunc(size, func(k lru.Key, _ any) {
		// Called by Add with t.mu held.
		delete(t.entries, k.(Key))
		t.evicted++
	})
	return t
}

// Record counts one request. When the table is full, the entry seen least
// recently makes room for a new one.
func (t *Table) Record(r Request) {
	if t == nil {
		return
	}
	k := r.Key
	k.User = Clean(k.User, MaxUserBytes)
	k.UserAgent = Clean(k.UserAgent, MaxUserAgentBytes)
	t.mu.Lock()
	defer t.mu.Unlock()
	var e *entry
	if v, ok := t.lru.Get(k); ok {
		e = v.(*entry)
	} else {
		e = &entry{firstSeen: r.At}
		t.lru.Add(k, e)
		t.entries[k] = e
	}
	e.count++
	if r.Emulated {
		e.emulated++
	}
	e.verbs[verbIndex(r.Verb)]++
	if r.At.After(e.lastSeen) {
		e.lastSeen = r.At
	}
}

func verbIndex(v string) int {
	if i := slices.Index(verbs[:], v); i >= 0 {
		return i
	}
	return len(verbs) - 1
}

// Snapshot copies the table, the most recently seen entry first.
func (t *Table) Snapshot() Snapshot {
	if t == nil {
		return Snapshot{Clients: []Entry{}}
	}
	t.mu.Lock()
	s := Snapshot{Capacity: t.size, Evicted: t.evicted, Clients: make([]Entry, 0, len(t.entries))}
	for k, e := range t.entries {
		out := Entry{
			Group: k.Group, Version: k.Version, Resource: k.Resource, User: k.User, UserAgent: k.UserAgent,
			Count: e.count, Emulated: e.emulated, Verbs: map[string]uint64{}, FirstSeen: e.firstSeen, LastSeen: e.lastSeen,
		}
		for i, n := range e.verbs {
			if n > 0 {
				out.Verbs[verbs[i]] = n
			}
		}
		s.Clients = append(s.Clients, out)
	}
	t.mu.Unlock()
	slices.SortFunc(s.Clients, compareEntries)
	return s
}

// compareEntries orders by last seen, newest first, then by key, so that
// equal times still give one order.
func compareEntries(a, b Entry) int {
	if c := b.LastSeen.Compare(a.LastSeen); c != 0 {
		return c
	}
	return cmp.Or(
		cmp.Compare(a.Group, b.Group), cmp.Compare(a.Version, b.Version), cmp.Compare(a.Resource, b.Resource),
		cmp.Compare(a.User, b.User), cmp.Compare(a.UserAgent, b.UserAgent))
}

// Len is the number of entries.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// Evicted is the number of entries dropped to make room.
func (t *Table) Evicted() uint64 {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.evicted
}

// Clean makes s safe to keep and to print: at most max bytes, cut at a
// character boundary, valid UTF-8, and every character that does not print
// (control characters, which could drive a terminal) replaced by U+FFFD.
func Clean(s string, max int) string {
	if len(s) <= max && printableASCII(s) {
		return s // the common case, without copying
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if !unicode.IsPrint(r) {
			r = utf8.RuneError
		}
		if b.Len()+utf8.RuneLen(r) > max {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
