// Package usage counts requests for old API versions by the client that
// made them, in a table of bounded size that no single user can take over:
// each user holds at most a quota of entries, a user at its quota makes
// room among its own entries, and a full table makes room among the
// entries of the users holding the most. The proxy serves it at
// /debug/clients.
package usage

import (
	"bufio"
	"bytes"
	"cmp"
	"container/list"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds of the strings a client chooses or the cluster names: a client
// that sends a long User-Agent must not make an entry large. Group,
// version and resource come from discovery or the rules already; their
// bounds (a DNS subdomain, a DNS label, a resource and subresource of a
// DNS label each) only keep an entry's size known.
const (
	MaxUserAgentBytes = 256
	MaxUserBytes      = 512
	MaxGroupBytes     = 253
	MaxVersionBytes   = 63
	MaxResourceBytes  = 127
)

// MaxSize is the largest table [New] makes: its report stays within
// [MaxReportBytes](MaxSize), which `mvpctl rules usage` reads whole.
const MaxSize = 100_000

// DefaultPerUser is the most entries one user holds: a controller calling
// a few dozen old resources with a couple of user agents fits, and a user
// rotating its User-Agent header only replaces its own entries.
const DefaultPerUser = 100

// MaxEntryBytes bounds one entry as [Encode] writes it: every string at
// its bound, each byte escaped to two, every verb counted, the counts at
// their maximum (TestMaxEntryBytes checks it).
const MaxEntryBytes = 3200

// maxHeaderBytes bounds the report without its entries.
const maxHeaderBytes = 256

// MaxReportBytes bounds the report of a table of size entries.
func MaxReportBytes(size int) int64 {
	return maxHeaderBytes + int64(max(size, 0))*MaxEntryBytes
}

// MaxFullReportBytes bounds the report of a table of [MaxSize] entries,
// the largest there is.
const MaxFullReportBytes = maxHeaderBytes + MaxSize*MaxEntryBytes

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
	// PerUser is the number of entries one user holds at most.
	PerUser int `json:"perUser,omitempty"`
	// Evicted counts the entries dropped to make room for new ones.
	Evicted uint64 `json:"evicted"`
	// Clients are the entries, the most recently seen first.
	Clients []Entry `json:"clients"`
}

// Verbs are the verbs Kubernetes' request parsing yields for API resources;
// anything else is "other", so that a client cannot add keys to an entry.
var Verbs = [...]string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "proxy", "other"}

type entry struct {
	key                 Key
	elem                *list.Element // in its holder's entries
	all                 *list.Element // in Table.all
	count, emulated     uint64
	verbs               [len(Verbs)]uint64
	firstSeen, lastSeen time.Time
}

// holder is one user's entries, the most recently seen first.
type holder struct {
	user    string
	entries list.List     // of *entry
	elem    *list.Element // in Table.byCount[entries.Len()]
}

// Table is the bounded table. The zero value is not usable; use [New].
type Table struct {
	mu      sync.Mutex
	size    int
	perUser int
	entries map[Key]*entry
	users   map[string]*holder
	all     list.List // every *entry, the most recently seen first
	// byCount[n] lists the users holding n entries, the one longest at n
	// first; most is the largest n with users.
	byCount []list.List
	most    int
	evicted uint64
}

// New returns a table of at most size entries (at most [MaxSize]) and
// [DefaultPerUser] entries per user; nil when size is not positive (a nil
// table records nothing).
func New(size int) *Table { return newTable(size, DefaultPerUser) }

func newTable(size, perUser int) *Table {
	if size <= 0 {
		return nil
	}
	size = min(size, MaxSize)
	perUser = max(1, min(perUser, size))
	return &Table{
		size: size, perUser: perUser,
		entries: make(map[Key]*entry),
		users:   make(map[string]*holder),
		byCount: make([]list.List, perUser+1),
	}
}

// Record counts one request. A new entry of a user at its quota replaces
// that user's entry seen least recently; in a full table, it replaces the
// entry seen least recently of a user holding the most entries (the
// recording user itself when it holds as many). So no user's entries make
// room for those of a user holding as many or more.
func (t *Table) Record(r Request) {
	if t == nil {
		return
	}
	k := r.Key
	k.Group = Clean(k.Group, MaxGroupBytes)
	k.Version = Clean(k.Version, MaxVersionBytes)
	k.Resource = Clean(k.Resource, MaxResourceBytes)
	k.User = Clean(k.User, MaxUserBytes)
	k.UserAgent = Clean(k.UserAgent, MaxUserAgentBytes)
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[k]
	if ok {
		t.users[k.User].entries.MoveToFront(e.elem)
		t.all.MoveToFront(e.all)
	} else {
		e = t.add(k, r.At)
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

// add makes room for and adds a new entry. t.mu is held.
func (t *Table) add(k Key, at time.Time) *entry {
	h := t.users[k.User]
	if h == nil {
		h = &holder{user: k.User}
		t.users[k.User] = h
	}
	n := h.entries.Len()
	switch {
	case n >= t.perUser:
		t.evictOldest(h)
	case len(t.entries) >= t.size:
		if n == t.most {
			t.evictOldest(h)
		} else {
			t.evictOldest(t.largest())
		}
	}
	e := &entry{key: k, firstSeen: at}
	e.elem = h.entries.PushFront(e)
	e.all = t.all.PushFront(e)
	t.entries[k] = e
	t.users[k.User] = h // again, if making room took its last entry
	t.moved(h, h.entries.Len()-1)
	return e
}

// scanLargest is how many of the entries seen least recently largest
// looks at for one of a user holding the most.
const scanLargest = 64

// largest is a user holding the most entries: among the entries seen least
// recently, the first of such a user, so that between users of equal
// holdings the table forgets the least recently seen first. t.mu is held.
func (t *Table) largest() *holder {
	el := t.all.Back()
	for range scanLargest {
		if el == nil {
			break
		}
		if h := t.users[el.Value.(*entry).key.User]; h.entries.Len() == t.most {
			return h
		}
		el = el.Prev()
	}
	return t.byCount[t.most].Front().Value.(*holder)
}

// evictOldest drops h's entry seen least recently. t.mu is held.
func (t *Table) evictOldest(h *holder) {
	e := h.entries.Remove(h.entries.Back()).(*entry)
	delete(t.entries, e.key)
	t.all.Remove(e.all)
	t.evicted++
	t.moved(h, h.entries.Len()+1)
	if h.entries.Len() == 0 {
		delete(t.users, h.user)
	}
}

// moved files h under its new number of entries, from was. t.mu is held.
func (t *Table) moved(h *holder, was int) {
	if h.elem != nil {
		t.byCount[was].Remove(h.elem)
		h.elem = nil
	}
	n := h.entries.Len()
	if n > 0 {
		h.elem = t.byCount[n].PushBack(h)
	}
	t.most = max(t.most, n)
	for t.most > 0 && t.byCount[t.most].Len() == 0 {
		t.most--
	}
}

func verbIndex(v string) int {
	if i := slices.Index(Verbs[:], v); i >= 0 {
		return i
	}
	return len(Verbs) - 1
}

// Snapshot copies the table, the most recently seen entry first.
func (t *Table) Snapshot() Snapshot {
	if t == nil {
		return Snapshot{Clients: []Entry{}}
	}
	t.mu.Lock()
	s := Snapshot{Capacity: t.size, PerUser: t.perUser, Evicted: t.evicted, Clients: make([]Entry, 0, len(t.entries))}
	for k, e := range t.entries {
		out := Entry{
			Group: k.Group, Version: k.Version, Resource: k.Resource, User: k.User, UserAgent: k.UserAgent,
			Count: e.count, Emulated: e.emulated, Verbs: map[string]uint64{}, FirstSeen: e.firstSeen, LastSeen: e.lastSeen,
		}
		for i, n := range e.verbs {
			if n > 0 {
				out.Verbs[Verbs[i]] = n
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

// Encode writes s as indented JSON, one entry at a time (a full table's
// report is never held whole in memory), without HTML escaping, so that
// each entry stays within [MaxEntryBytes].
func Encode(w io.Writer, s Snapshot) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("{\n  \"capacity\": " + strconv.Itoa(s.Capacity) + ",\n")
	if s.PerUser != 0 {
		bw.WriteString("  \"perUser\": " + strconv.Itoa(s.PerUser) + ",\n")
	}
	bw.WriteString("  \"evicted\": " + strconv.FormatUint(s.Evicted, 10) + ",\n  \"clients\": [")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("    ", "  ")
	for i, e := range s.Clients {
		if i > 0 {
			bw.WriteString(",")
		}
		buf.Reset()
		if err := enc.Encode(e); err != nil {
			return err
		}
		bw.WriteString("\n    ")
		bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	if len(s.Clients) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
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
