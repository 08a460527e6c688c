package response

import (
	"bytes"
	"errors"
	"testing"
)

func TestReadObject(t *testing.T) {
	for _, n := range []int{0, 9, 10} {
		if data, err := ReadObject(bytes.NewReader(make([]byte, n)), 10); err != nil || len(data) != n {
			t.Errorf("%d bytes, limit 10: %d, %v", n, len(data), err)
		}
	}
	var big *ObjectTooLargeError
	if _, err := ReadObject(bytes.NewReader(make([]byte, 11)), 10); !errors.As(err, &big) {
		t.Errorf("11 bytes, limit 10: %v", err)
	}
}
