// main.run -> {main.hotA, main.hotB} (2:1) -> main.spin, where spin is a
// frameless leaf (no locals, no calls: Go gives it no frame and no frame
// pointer), so a frame-pointer walk sampled in spin skips its caller.
// Usage: goshot [SECONDS] (default: forever).
package main

import (
	"os"
	"strconv"
	"time"
)

var sink uint64

//go:noinline
func spin(n uint64, acc uint64) uint64 {
	for i := uint64(0); i < n; i++ {
		acc = acc*6364136223846793005 + i
	}
	return acc
}

//go:noinline
func hotA(acc uint64) uint64 { return spin(2_000_000, acc) }

//go:noinline
func hotB(acc uint64) uint64 { return spin(1_000_000, acc) }

//go:noinline
func run(deadline time.Time, forever bool) {
	acc := uint64(1)
	for forever || time.Now().Before(deadline) {
		acc = hotA(acc)
		acc = hotB(acc)
	}
	sink = acc
}

func main() {
	seconds := 0.0
	if len(os.Args) > 1 {
		seconds, _ = strconv.ParseFloat(os.Args[1], 64)
	}
	run(time.Now().Add(time.Duration(seconds*float64(time.Second))), seconds == 0)
}
