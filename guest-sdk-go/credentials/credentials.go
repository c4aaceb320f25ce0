// Package credentials reads the credentials bound to the provider: the keys
// of its Secret (--provider-credentials), and nothing else. Upstream
// providers read such secrets from files; here they come from the host.
//
// Prefer hosthttp.Bearer or hosthttp.AWSSigV4 where they fit: the host then
// attaches the secret to requests and it never enters the provider.
package credentials

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/host"
)

// ErrNotFound says no credential of that name is bound to the provider.
var ErrNotFound = errors.New("credential not bound to this provider")

// Get is the value of the credential name.
func Get(name string) ([]byte, error) {
	value, found := host.Current().Credential(name)
	if !found {
		return nil, fmt.Errorf("%q: %w", name, ErrNotFound)
	}
	return value, nil
}

// GetString is the value of the credential name as text, without the white
// space around it (a Secret's file often ends with a newline).
func GetString(name string) (string, error) {
	value, err := Get(name)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(value) {
		return "", fmt.Errorf("credential %q is not UTF-8 text", name)
	}
	return strings.TrimSpace(string(value)), nil
}
