//go:build race

package engine_test

func init() { roundTripDefaultN = 20 }
