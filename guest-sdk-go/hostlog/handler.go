// Package hostlog writes log/slog records into the host's log, where they
// carry the provider's name and the call.
//
// Inside a component the default logger (slog.Default, and so the log
// package) already writes there; stdout and stderr go to the host's log
// too.
package hostlog

import (
	"context"
	"log/slog"
	"slices"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/host"
)

// Handler is a slog.Handler writing to the host's log. Attributes become
// the record's fields, named with their groups joined by dots.
type Handler struct {
	level  slog.Leveler
	fields []host.Field
	prefix string
}

// NewHandler writes records at level and above (every record when level is
// nil; the host's own log level filters them too).
func NewHandler(level slog.Leveler) *Handler {
	return &Handler{level: level}
}

// Enabled says whether records at level are written.
func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	return h.level == nil || level >= h.level.Level()
}

// Handle writes record.
func (h *Handler) Handle(_ context.Context, record slog.Record) error {
	fields := slices.Clip(h.fields)
	record.Attrs(func(attr slog.Attr) bool {
		fields = appendAttr(fields, h.prefix, attr)
		return true
	})
	host.Current().Log(record.Level, record.Message, fields)
	return nil
}

// WithAttrs is a handler adding attrs to every record.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	derived := *h
	derived.fields = slices.Clip(h.fields)
	for _, attr := range attrs {
		derived.fields = appendAttr(derived.fields, h.prefix, attr)
	}
	return &derived
}

// WithGroup is a handler naming the attributes that follow within group.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	derived := *h
	derived.prefix = h.prefix + name + "."
	return &derived
}

// appendAttr appends attr as fields, a group as one field per member.
func appendAttr(fields []host.Field, prefix string, attr slog.Attr) []host.Field {
	value := attr.Value.Resolve()
	if value.Kind() == slog.KindGroup {
		if attr.Key != "" {
			prefix += attr.Key + "."
		}
		for _, member := range value.Group() {
			fields = appendAttr(fields, prefix, member)
		}
		return fields
	}
	if attr.Equal(slog.Attr{}) {
		return fields
	}
	return append(fields, host.Field{Key: prefix + attr.Key, Value: value.String()})
}
