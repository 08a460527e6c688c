package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds the Go form of the value semantics of the jq runtime
// (mvp.jq): equality and type conversion. The native executor uses them; the
// golden tests prove both forms agree.

var (
	intStringRE    = regexp.MustCompile(`^-?[0-9]+$`)
	numberStringRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)
)

// ConvertValue converts v to type t the way mvp_convert does in jq.
func ConvertValue(v any, t ValueType) (any, error) {
	switch t {
	case TypeString:
		switch v := v.(type) {
		case string:
			return v, nil
		case bool, json.Number, int, int64, float64, *big.Int:
			return gojqString(v), nil
		}
	case TypeInteger:
		if isNumber(v) && isIntegral(v) {
			return v, nil
		}
		if s, ok := v.(string); ok && intStringRE.MatchString(s) {
			return parseJSONNumber(s), nil
		}
	case TypeNumber:
		if isNumber(v) {
			return v, nil
		}
		if s, ok := v.(string); ok && numberStringRE.MatchString(s) {
			return parseJSONNumber(s), nil
		}
	case TypeBoolean:
		switch v {
		case true, "true":
			return true, nil
		case false, "false":
			return false, nil
		}
	case TypeIntOrString:
		if isNumber(v) && isIntegral(v) {
			return v, nil
		}
		if s, ok := v.(string); ok {
			if intStringRE.MatchString(s) {
				return parseJSONNumber(s), nil
			}
			return s, nil
		}
	default:
		return nil, fmt.Errorf("unknown type %s", t)
	}
	return nil, fmt.Errorf("cannot convert %s %s to %s", TypeName(v), gojqString(v), t)
}

// parseJSONNumber turns a numeric string into the number jq's tonumber gives.
func parseJSONNumber(s string) any {
	return json.Number(normalizeNumberText(s))
}

// normalizeNumberText renders numbers the way jq prints them after tonumber:
// integers without leading zeros or a minus on zero, others as float64.
func normalizeNumberText(s string) string {
	if intStringRE.MatchString(s) {
		i, _ := new(big.Int).SetString(s, 10)
		return i.String()
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return gojqString(f)
}

var tojsonCode = func() *gojq.Code {
	q, err := gojq.Parse("tojson")
	if err != nil {
		panic(err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		panic(err)
	}
	return code
}()

// gojqString is gojq's tojson of a scalar.
func gojqString(v any) string {
	out, _ := tojsonCode.Run(v).Next()
	s, _ := out.(string)
	return s
}

func isNumber(v any) bool {
	switch v.(type) {
	case json.Number, int, int64, float64, *big.Int:
		return true
	}
	return false
}

func isIntegral(v any) bool {
	f, ok := gojq.ToFloat64(v)
	if !ok {
		return false
	}
	switch v.(type) {
	case int, int64, *big.Int:
		return true
	case json.Number:
		if intStringRE.MatchString(string(v.(json.Number))) {
			return true
		}
	}
	return !math.IsInf(f, 0) && f == math.Floor(f)
}

// TypeName is jq's type name of a value.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	if isNumber(v) {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// EqualJSON compares two JSON values as jq's == does: numbers by value, so
// 1, 1.0 and json.Number("1") are equal.
func EqualJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !EqualJSON(av, bv) {
				return false
			}
		}
		return true
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !EqualJSON(a[i], bs[i]) {
				return false
			}
		}
		return true
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case nil:
		return b == nil
	}
	if isNumber(a) && isNumber(b) {
		return compareNumbers(a, b) == 0
	}
	return false
}

// compareNumbers orders two numbers exactly when both are integers.
func compareNumbers(a, b any) int {
	// Fast paths: the same literal, or integers that fit in an int64.
	if an, ok := a.(json.Number); ok {
		if bn, ok := b.(json.Number); ok && an == bn {
			return 0
		}
	}
	if ai, ok := smallInt(a); ok {
		if bi, ok := smallInt(b); ok {
			return cmpInt64(ai, bi)
		}
	}
	ai, aok := bigInt(a)
	bi, bok := bigInt(b)
	if aok && bok {
		return ai.Cmp(bi)
	}
	af, _ := gojq.ToFloat64(a)
	bf, _ := gojq.ToFloat64(b)
	switch {
	case af < bf:
		return -1
	case af > bf:
		return 1
	}
	return 0
}

func smallInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int64:
		return v, true
	case json.Number:
		i, err := strconv.ParseInt(string(v), 10, 64)
		return i, err == nil
	}
	return 0, false
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func bigInt(v any) (*big.Int, bool) {
	switch v := v.(type) {
	case int:
		return big.NewInt(int64(v)), true
	case int64:
		return big.NewInt(v), true
	case *big.Int:
		return v, true
	case json.Number:
		if intStringRE.MatchString(string(v)) {
			i, ok := new(big.Int).SetString(string(v), 10)
			return i, ok
		}
	}
	return nil, false
}

// valueHasType reports whether a rules value can be a field of type t.
func valueHasType(v any, t ValueType) bool {
	switch t {
	case TypeString:
		_, ok := v.(string)
		return ok
	case TypeInteger:
		return isNumber(v) && isIntegral(v)
	case TypeNumber:
		return isNumber(v)
	case TypeBoolean:
		_, ok := v.(bool)
		return ok
	case TypeIntOrString:
		_, ok := v.(string)
		return ok || isNumber(v) && isIntegral(v)
	}
	return true
}

func fieldInternal(fld string, err error) *field.Error {
	return &field.Error{Type: field.ErrorTypeInvalid, Field: fld, BadValue: field.OmitValueType{}, Detail: strings.TrimSpace(err.Error())}
}
