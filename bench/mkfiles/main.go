// Command mkfiles creates N empty files in DIR (made if missing), spread
// over directories of at most 1000 entries, as fast as one process can:
// the cleanup benchmark's workload.
//
//	mkfiles DIR N
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: mkfiles DIR N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 0 {
		fmt.Fprintln(os.Stderr, "mkfiles: N must be a count")
		os.Exit(2)
	}
	for i := 0; i < n; i++ {
		sub := filepath.Join(os.Args[1], strconv.Itoa(i/1000))
		if i%1000 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				fmt.Fprintln(os.Stderr, "mkfiles:", err)
				os.Exit(1)
			}
		}
		f, err := os.OpenFile(filepath.Join(sub, strconv.Itoa(i)), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mkfiles:", err)
			os.Exit(1)
		}
		f.Close()
	}
}
