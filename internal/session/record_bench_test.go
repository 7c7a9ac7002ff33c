package session

import (
	"testing"
	"time"
)

// benchRecord is a realistic exited session's record.
func benchRecord() Record {
	status := 0
	created := time.Date(2026, 11, 30, 6, 0, 0, 123456789, time.UTC)
	return Record{
		Version:    RecordVersion,
		ID:         "0123456789ab",
		State:      Exited,
		UID:        1000,
		WrapperPID: 41234,
		InitPID:    41240,
		InitStart:  123456789,
		Command:    "opencode",
		Created:    created,
		Updated:    created.Add(42 * time.Minute),
		ExitStatus: &status,
	}
}

func BenchmarkParseRecord(b *testing.B) {
	data := benchRecord().Marshal()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRecord(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRecordMarshal(b *testing.B) {
	r := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		if data := r.Marshal(); len(data) == 0 {
			b.Fatal("empty record")
		}
	}
}
