// A Go provider that probes its sandbox, for the sandbox tests: what the Go
// runtime and standard library reach through the WASI adapter.
//
// EnsureLoadBalancer reads the probe from the Service's annotation
// hostile/attack and its argument from hostile/arg; what the probe observed
// comes back as the status's host name, or as the error. The factory draws
// a random number the probe born answers, so that a test can tell whether
// calls start from one initialised instance or initialise each. The probe
// aws-signed signs a request with aws-sdk-go-v2's own signer and placeholder
// keys, as a vendor's provider does, and answers what the server said.
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	v1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	_ "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/component"
)

type hostile struct {
	born uint64
}

func init() {
	cloudprovider.RegisterCloudProvider("hostile-go", func(io.Reader) (cloudprovider.Interface, error) {
		var born [8]byte
		if _, err := rand.Read(born[:]); err != nil {
			return nil, err
		}
		return hostile{born: binary.LittleEndian.Uint64(born[:])}, nil
	})
}

func main() {}

func (hostile) ProviderName() string                               { return "hostile-go" }
func (hostile) HasClusterID() bool                                 { return true }
func (h hostile) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return h, true }
func (hostile) Instances() (cloudprovider.Instances, bool)         { return nil, false }
func (hostile) InstancesV2() (cloudprovider.InstancesV2, bool)     { return nil, false }
func (hostile) Zones() (cloudprovider.Zones, bool)                 { return nil, false }
func (hostile) Clusters() (cloudprovider.Clusters, bool)           { return nil, false }
func (hostile) Routes() (cloudprovider.Routes, bool)               { return nil, false }

func observed(format string, args ...any) *v1.LoadBalancerStatus {
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: fmt.Sprintf(format, args...)}}}
}

func (h hostile) EnsureLoadBalancer(_ context.Context, _ string, service *v1.Service, nodes cloudprovider.NodeSet) (*v1.LoadBalancerStatus, error) {
	arg := service.Annotations["hostile/arg"]
	switch attack := service.Annotations["hostile/attack"]; attack {
	case "":
		return observed("ok with %d nodes", nodes.Len()), nil
	case "born":
		return observed("born %d", h.born), nil
	case "nodes":
		return observed("%s", describe(nodes)), nil
	case "file":
		read, err := os.ReadFile(arg)
		if err != nil {
			return nil, fmt.Errorf("file: %w", err)
		}
		return observed("read %d bytes", len(read)), nil
	case "create":
		if err := os.WriteFile(arg, []byte("written"), 0o600); err != nil {
			return nil, fmt.Errorf("create: %w", err)
		}
		return observed("created %s", arg), nil
	case "dir":
		entries, err := os.ReadDir(arg)
		if err != nil {
			return nil, fmt.Errorf("dir: %w", err)
		}
		return observed("%d entries", len(entries)), nil
	case "env":
		home, found := os.LookupEnv("HOME")
		return observed("%d variables, %d arguments, HOME %v %q", len(os.Environ()), len(os.Args), found, home), nil
	case "stdin":
		read, err := io.ReadAll(os.Stdin)
		return observed("stdin %d bytes, %v", len(read), err), nil
	case "dial":
		connection, err := net.Dial("tcp", arg)
		if err != nil {
			return nil, fmt.Errorf("dial: %w", err)
		}
		connection.Close()
		return observed("connected to %s", arg), nil
	case "aws-signed":
		return awsSigned(arg)
	case "panic":
		panic(arg)
	case "spin":
		for counter := 0; ; counter++ {
			_ = counter
		}
	default:
		return nil, fmt.Errorf("unknown attack %q", attack)
	}
}

// emptyPayload is the SHA-256 of an empty body, which the signer signs.
const emptyPayload = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// awsSigned sends a GET to the URL of "KEY-ID SESSION-TOKEN|- URL", signed
// by aws-sdk-go-v2 with KEY-ID and a secret key the provider does not have,
// through Go's default client.
func awsSigned(arg string) (*v1.LoadBalancerStatus, error) {
	fields := strings.Fields(arg)
	if len(fields) != 3 {
		return nil, fmt.Errorf("aws-signed takes three arguments")
	}
	credentials := aws.Credentials{AccessKeyID: fields[0], SecretAccessKey: "placeholder"}
	if fields[1] != "-" {
		credentials.SessionToken = fields[1]
	}
	request, err := http.NewRequest(http.MethodGet, fields[2], nil)
	if err != nil {
		return nil, err
	}
	err = v4.NewSigner().SignHTTP(context.Background(), credentials, request, emptyPayload, "ec2", "eu-west-1", time.Now())
	if err != nil {
		return nil, err
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return nil, err
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		return nil, err
	}
	return observed("status %d body %s", response.StatusCode, body), nil
}

// describe is every view of nodes in one line.
func describe(nodes cloudprovider.NodeSet) string {
	joined := func(values iter.Seq2[int, string]) string {
		var all []string
		for _, value := range values {
			all = append(all, value)
		}
		return strings.Join(all, ",")
	}
	var uids []string
	for index := range nodes.Len() + 1 {
		node, ok := nodes.Get(index)
		if ok {
			uids = append(uids, string(node.UID))
		}
	}
	return fmt.Sprintf("names %s ids %s internal %s uids %s previous %v added %v removed %v",
		joined(nodes.Names()), joined(nodes.ProviderIDs()), joined(nodes.Addresses(v1.NodeInternalIP)),
		strings.Join(uids, ","), nodes.HasPrevious(), nodes.Added(), nodes.Removed())
}

func (hostile) GetLoadBalancer(context.Context, string, *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	return nil, false, cloudprovider.NotImplemented
}

func (hostile) GetLoadBalancerName(_ context.Context, _ string, service *v1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(service)
}

func (hostile) UpdateLoadBalancer(context.Context, string, *v1.Service, cloudprovider.NodeSet) error {
	return cloudprovider.NotImplemented
}

func (hostile) EnsureLoadBalancerDeleted(context.Context, string, *v1.Service) error {
	return cloudprovider.NotImplemented
}
