package jsonvalue

import "encoding/binary"

// Word-at-a-time tests on 8 bytes of a string, so that the long runs of
// plain ASCII that strings are mostly made of are skipped 8 bytes at a
// time. Each is exact: a lane is flagged only if its byte matches.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// word loads b[i:i+8].
func word(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }

// wordString loads s[i:i+8] (the compiler makes it one load).
func wordString(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// hasByte flags the lanes of x equal to c.
func hasByte(x uint64, c byte) uint64 {
	v := x ^ (lsb * uint64(c))
	return (v - lsb) & ^v & msb
}

// hasControl flags the lanes of x below 0x20 (for lanes without the high
// bit; the callers test that separately).
func hasControl(x uint64) uint64 {
	return (x - lsb*0x20) & ^x & msb
}

// plainRun skips, 8 bytes at a time, the bytes of a string from b[i] that
// need no attention (no quote, backslash or control byte); it returns where
// it stopped and whether it skipped bytes outside ASCII.
func plainRun(b []byte, i int) (int, bool) {
	nonASCII := false
	for ; i+8 <= len(b); i += 8 {
		x := word(b, i)
		if hasByte(x, '"')|hasByte(x, '\\')|hasControl(x) != 0 {
			break
		}
		nonASCII = nonASCII || x&msb != 0
	}
	return i, nonASCII
}
