package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Cloud is a client of the fake cloud's object store: collections of JSON
// objects with versions for optimistic concurrency. Whatever must outlive a
// call (load balancers, address claims, routes) lives there.
type Cloud struct {
	url    string
	client *http.Client
}

// Stored is an object read from the store.
type Stored[T any] struct {
	Key     string `json:"key"`
	Version uint64 `json:"version"`
	Value   T      `json:"value"`
}

// Precondition is how a write relates to what is stored.
type Precondition struct {
	header, value string
}

var (
	// Absent writes only if nothing is stored under the key.
	Absent = Precondition{"if-none-match", "*"}
	// Whatever writes regardless of what is stored.
	Whatever = Precondition{}
)

// AtVersion writes only if the stored object is at version.
func AtVersion(version uint64) Precondition {
	return Precondition{"if-match", strconv.FormatUint(version, 10)}
}

// NewCloud is a client of the store at url, through http.DefaultClient
// (inside the component, the host's HTTP).
func NewCloud(url string) *Cloud {
	return &Cloud{url: strings.TrimRight(url, "/"), client: http.DefaultClient}
}

func (c *Cloud) objectURL(collection, key string) string {
	return fmt.Sprintf("%s/v1/%s/%s", c.url, collection, key)
}

// do sends a request and reads its whole response.
func (c *Cloud) do(method, url string, body []byte, header http.Header) (int, []byte, error) {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, reader)
	if err != nil {
		return 0, nil, err
	}
	if header != nil {
		req.Header = header
	}
	res, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	read, err := io.ReadAll(res.Body)
	return res.StatusCode, read, err
}

// statusError names the status and the start of the body, unless the
// status is 2xx.
func statusError(status int, body []byte) error {
	if status >= 200 && status < 300 {
		return nil
	}
	if len(body) > 512 {
		body = body[:512]
	}
	return fmt.Errorf("HTTP %d: %s", status, strings.TrimSpace(string(body)))
}

func decode(body []byte, into any) error {
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return nil
}

// List is every object of collection.
func List[T any](c *Cloud, collection string) ([]Stored[T], error) {
	status, body, err := c.do(http.MethodGet, fmt.Sprintf("%s/v1/%s", c.url, collection), nil, nil)
	if err != nil {
		return nil, err
	}
	if err := statusError(status, body); err != nil {
		return nil, err
	}
	var objects []Stored[T]
	return objects, decode(body, &objects)
}

// Get is the object key of collection; nil when there is none.
func Get[T any](c *Cloud, collection, key string) (*Stored[T], error) {
	status, body, err := c.do(http.MethodGet, c.objectURL(collection, key), nil, nil)
	if err != nil {
		return nil, err
	}
	if status == http.StatusNotFound {
		return nil, nil
	}
	if err := statusError(status, body); err != nil {
		return nil, err
	}
	var object Stored[T]
	return &object, decode(body, &object)
}

// Put writes value under key; false when the precondition failed.
func (c *Cloud) Put(collection, key string, value any, precondition Precondition) (bool, error) {
	body, err := json.Marshal(value)
	if err != nil {
		return false, err
	}
	header := http.Header{"Content-Type": {"application/json"}}
	if precondition != Whatever {
		header.Set(precondition.header, precondition.value)
	}
	status, answer, err := c.do(http.MethodPut, c.objectURL(collection, key), body, header)
	if err != nil {
		return false, err
	}
	if status == http.StatusPreconditionFailed {
		return false, nil
	}
	return true, statusError(status, answer)
}

// Delete deletes key; false when it was not there.
func (c *Cloud) Delete(collection, key string) (bool, error) {
	status, body, err := c.do(http.MethodDelete, c.objectURL(collection, key), nil, nil)
	if err != nil {
		return false, err
	}
	if status == http.StatusNotFound {
		return false, nil
	}
	return true, statusError(status, body)
}
