package units

import "fmt"

// Bytes formats n with one decimal in the largest binary unit below it
// ("512 B", "1.5 KiB"), sep between number and unit ("" gives "1.5KiB",
// as a table column wants).
func Bytes(n uint64, sep string) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d%sB", n, sep)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%s%ciB", float64(n)/float64(div), sep, "KMGTPE"[exp])
}
