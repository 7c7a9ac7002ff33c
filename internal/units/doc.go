// Package units formats quantities for people: byte counts in binary
// units (KiB, MiB, …). It is for agentbox's own output (ps, doctor), not
// for parsing.
package units
