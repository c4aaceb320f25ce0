//go:build wasip1

package component

import (
	"log/slog"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/hostlog"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/host"
	_ "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/exports/wit_exports"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/glue"
)

func init() {
	host.Use(glue.Backend{})
	slog.SetDefault(slog.New(hostlog.NewHandler(nil)))
}
