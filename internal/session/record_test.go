package session

import (
	"strings"
	"testing"
	"time"
)

func TestRecordRoundTrip(t *testing.T) {
	st := 3
	in := Record{Version: RecordVersion, ID: "0123456789ab", State: Exited, UID: 1000, WrapperPID: 42,
		InitPID: 43, InitStart: 99, Command: "opencode", Created: time.Unix(1, 0).UTC(), Updated: time.Unix(2, 0).UTC(), ExitStatus: &st}
	out, err := ParseRecord(in.Marshal())
	if err != nil {
		t.Fatalf("ParseRecord(Marshal(%+v)) = %v", in, err)
	}
	if out.ID != in.ID || out.State != in.State || *out.ExitStatus != 3 || !out.Created.Equal(in.Created) || out.InitStart != 99 {
		t.Errorf("ParseRecord(Marshal(r)) = %+v, want %+v", out, in)
	}
}

func TestParseRecordRejects(t *testing.T) {
	good := `{"version":1,"id":"0123456789ab","state":"running","uid":1,"wrapper_pid":2,"command":"x","created":"2026-01-01T00:00:00Z","updated":"2026-01-01T00:00:00Z"}`
	if _, err := ParseRecord([]byte(good)); err != nil {
		t.Fatalf("ParseRecord(good) = %v, want nil", err)
	}
	for name, in := range map[string]string{
		"empty":         ``,
		"truncated":     good[:len(good)/2],
		"unknown key":   strings.Replace(good, `"uid"`, `"uidx"`, 1),
		"unknown state": strings.Replace(good, `running`, `sleeping`, 1),
		"bad id":        strings.Replace(good, `0123456789ab`, `../../etc`, 1),
		"version":       strings.Replace(good, `"version":1`, `"version":2`, 1),
		"trailing":      good + `{}`,
		"wrong type":    strings.Replace(good, `"uid":1`, `"uid":"1"`, 1),
		"garbage":       "\x00\xff\x00",
	} {
		if r, err := ParseRecord([]byte(in)); err == nil {
			t.Errorf("ParseRecord(%s) = %+v, nil; want error", name, r)
		}
	}
}

func TestValidID(t *testing.T) {
	for in, want := range map[string]bool{"0123456789ab": true, "0123456789AB": false, "0123456789a": false,
		"0123456789abc": false, "..": false, "": false, "state.tmpxxx": false, "0123456789a/": false} {
		if got := ValidID(in); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", in, got, want)
		}
	}
}

func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(`{"version":1,"id":"0123456789ab","state":"running","uid":1,"wrapper_pid":2,"command":"x","created":"2026-01-01T00:00:00Z","updated":"2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRecord(b)
		if err != nil {
			return
		}
		if !r.State.Valid() || !ValidID(r.ID) {
			t.Fatalf("ParseRecord accepted %+v", r)
		}
		if _, err := ParseRecord(r.Marshal()); err != nil {
			t.Fatalf("ParseRecord(Marshal(%+v)) = %v", r, err)
		}
	})
}
