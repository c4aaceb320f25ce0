package hostlog_test

import (
	"log/slog"
	"testing"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/hostlog"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/native"
)

type record struct {
	level   slog.Level
	message string
	fields  []native.Field
}

type logs struct{ records []record }

func (l *logs) Send(native.Request) (native.Response, error) { return native.Response{}, nil }
func (l *logs) Credential(string) ([]byte, bool)             { return nil, false }
func (l *logs) Log(level slog.Level, message string, fields []native.Field) {
	l.records = append(l.records, record{level, message, fields})
}

func TestRecordsCarryTheirGroupedAttributesAsFields(t *testing.T) {
	host := &logs{}
	native.SetHost(host)
	defer native.SetHost(nil)

	logger := slog.New(hostlog.NewHandler(slog.LevelInfo)).With("provider", "acme").WithGroup("lb")
	logger.Debug("dropped")
	logger.Warn("ensured", "name", "a1", slog.Group("ports", "http", 80), slog.Attr{})

	if len(host.records) != 1 {
		t.Fatalf("%d records: %+v", len(host.records), host.records)
	}
	got := host.records[0]
	want := []native.Field{{Key: "provider", Value: "acme"}, {Key: "lb.name", Value: "a1"}, {Key: "lb.ports.http", Value: "80"}}
	if got.level != slog.LevelWarn || got.message != "ensured" || len(got.fields) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got.fields[i] != want[i] {
			t.Errorf("fields %v, want %v", got.fields, want)
		}
	}
}
